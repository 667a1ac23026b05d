// The ceiling: a bare uWS server (child process) that answers every GET with the fixed KV-sized
// body and every PUT with `true` after reading the body. Nothing over HTTP on uWS can beat it on
// this machine, so agent figures are read as a fraction of it. A GET with `?index=` parks until
// the next PUT, the least a blocking query can cost, which the fan-out bench compares with.
// Usage: node ceiling-server.js <port>
import uWS, { type HttpResponse } from '@based/uws';
import { CEILING_GET_BODY } from './fixtures.js';
import { listenUntilTerm, peerPort } from './uws-peer.js';

const port = peerPort('ceiling-server <port>');

// The agent sends these on a KV GET too; sending them here keeps header bytes comparable.
const CONTENT_TYPE = 'application/json';
const INDEX = '12';
// Parked queries answer with a later index, as a woken blocking query does.
const WOKEN_INDEX = '13';

const parked = new Set<HttpResponse>();

function wakeAll(): void {
  // Run from setImmediate, each answer in its own cork: inside the PUT's uWS callback or a microtask
  // of it uWS cannot cork a second socket and writes piecemeal, 10x slower for 15k (3 s, not 0.3 s).
  for (const res of parked) {
    res.cork(() => {
      res.writeHeader('Content-Type', CONTENT_TYPE).writeHeader('X-Svc-Index', WOKEN_INDEX).end(CEILING_GET_BODY);
    });
  }
  parked.clear();
}

const app = uWS
  .App()
  .get('/*', (res, req) => {
    if (req.getQuery('index') !== undefined) {
      res.onAborted(() => parked.delete(res));
      parked.add(res);
      return;
    }
    res.cork(() => {
      res.writeHeader('Content-Type', CONTENT_TYPE).writeHeader('X-Svc-Index', INDEX).end(CEILING_GET_BODY);
    });
  })
  .put('/*', (res) => {
    // Read the whole body before answering, as the agent must; the bytes themselves are dropped.
    let aborted = false;
    res.onAborted(() => (aborted = true));
    res.onData((_chunk, isLast) => {
      if (!isLast || aborted) return;
      res.cork(() => {
        res.writeHeader('Content-Type', CONTENT_TYPE).writeHeader('X-Svc-Index', INDEX).end('true');
      });
      if (parked.size > 0) setImmediate(wakeAll);
    });
  })
  .any('/*', (res) => {
    res.writeStatus('405 Method Not Allowed').end();
  });

listenUntilTerm(app, port, 'ceiling-server', 'ceiling listening');
