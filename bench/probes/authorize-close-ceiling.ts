// The ceiling for new-connection-per-request (child process): bare uWS that reads a POST body and
// answers a fixed authorize-sized body, closing the connection when the request asks for it (the
// foundation's ceiling never closes, since uWS ignores a request's Connection: close). Nothing
// over HTTP on uWS accepts connections faster on this machine.
// Usage: node authorize-close-ceiling.js <port>
import uWS from '@based/uws';
import { listenUntilTerm, peerPort } from '../support/uws-peer.js';

const port = peerPort('authorize-close-ceiling <port>');

const BODY =
  '{"Authorized":true,"Reason":"Matched L4 intention: ns-5/src-5 =\\u003e ns-5/svc-5 (Precedence: 9, Action: DENY)"}';

const app = uWS.App().any('/*', (res, req) => {
  const close = /(?:^|,)\s*close\s*(?:,|$)/i.test(req.getHeader('connection'));
  let aborted = false;
  res.onAborted(() => (aborted = true));
  res.onData((_chunk, isLast) => {
    if (!isLast || aborted) return;
    res.cork(() => {
      res.writeHeader('Content-Type', 'application/json').end(BODY, close);
    });
  });
});

listenUntilTerm(app, port, 'authorize-close-ceiling', 'close ceiling listening');
