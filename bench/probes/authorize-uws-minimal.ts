// The least a JavaScript app on uWS does to answer authorize (child process), the yardstick
// between the bare-uWS ceiling (no work) and the agent: read the body, JSON.parse it, split the
// client's URI, one Map lookup of the 10,000 intentions' exact sources (a wildcard-only caller
// gets the default, as the Go peer does), and a pre-encoded answer with the agent's body bytes.
// No token, namespace, framing or error handling beyond a 400: not a server to run, a floor.
// Usage: node authorize-uws-minimal.js <port>
import uWS from '@based/uws';
import { listenUntilTerm, peerPort } from '../support/uws-peer.js';
import { DESTINATIONS, destinationName, namespaceOf, PER_DESTINATION } from '../micro/authorize.js';

const port = peerPort('authorize-uws-minimal <port>');

const answer = (authorized: boolean, reason: string): Buffer =>
  Buffer.from(JSON.stringify({ Authorized: authorized, Reason: reason }).replaceAll('=>', '=\\u003e'));

/** "srcNS/src => dstNS/dst" → the answer's bytes: src-0..7 per destination, actions alternating. */
const answers = new Map<string, Buffer>();
for (let d = 0; d < DESTINATIONS; d++) {
  const ns = namespaceOf(d);
  for (let s = 0; s < PER_DESTINATION - 2; s++) {
    const key = `${ns}/src-${s} => ${ns}/${destinationName(d)}`;
    const allow = s % 2 === 0;
    answers.set(
      key,
      answer(allow, `Matched L4 intention: ${key} (Precedence: 9, Action: ${allow ? 'ALLOW' : 'DENY'})`),
    );
  }
}
const DEFAULT = answer(true, 'Default behavior configured by ACLs');

interface Body {
  Target?: string;
  Namespace?: string;
  ClientCertURI?: string;
}

function decide(chunk: ArrayBuffer): Buffer | undefined {
  let body: Body;
  try {
    body = JSON.parse(Buffer.from(chunk).toString('utf8')) as Body;
  } catch {
    return undefined;
  }
  const uri = (body.ClientCertURI ?? '').split('/'); // spiffe://<domain>/ns/<ns>/dc/<dc>/svc/<name>
  if (uri.length !== 9 || uri[3] !== 'ns' || uri[7] !== 'svc') return undefined;
  return answers.get(`${uri[4]}/${uri[8]} => ${body.Namespace ?? 'default'}/${body.Target ?? ''}`) ?? DEFAULT;
}

const app = uWS.App().post('/*', (res) => {
  // Set once answered or gone: wrk's bodies arrive in one chunk, and one split across chunks is
  // refused at its first (no row sends one).
  let finished = false;
  res.onAborted(() => (finished = true));
  res.onData((chunk, isLast) => {
    if (finished) return;
    const reply = isLast ? decide(chunk) : undefined;
    res.cork(() => {
      if (reply === undefined) res.writeStatus('400 Bad Request').end('bad request');
      else
        res.writeHeader('Content-Type', 'application/json').writeHeader('X-Svc-Default-ACL-Policy', 'allow').end(reply);
    });
    finished = true;
  });
});

listenUntilTerm(app, port, 'authorize-uws-minimal', 'minimal uWS authorize listening');
