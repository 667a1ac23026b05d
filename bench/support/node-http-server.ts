// The node:http baseline (child process): the same answers as the ceiling server, on Node's own
// HTTP stack, so a bench can show what uWS buys over it.
// Usage: node node-http-server.js <port>
import { createServer } from 'node:http';
import { CEILING_GET_BODY } from './fixtures.js';
import { LOOPBACK } from './ports.js';

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port <= 0) {
  process.stderr.write('usage: node-http-server <port>\n');
  process.exit(2);
}

const GET_HEADERS = {
  'Content-Type': 'application/json',
  'X-Svc-Index': '12',
  'Content-Length': String(Buffer.byteLength(CEILING_GET_BODY)),
};
const PUT_HEADERS = { 'Content-Type': 'application/json', 'X-Svc-Index': '12', 'Content-Length': '4' };

const server = createServer((req, res) => {
  if (req.method === 'GET') {
    res.writeHead(200, GET_HEADERS).end(CEILING_GET_BODY);
  } else if (req.method === 'PUT') {
    req.resume();
    req.once('end', () => res.writeHead(200, PUT_HEADERS).end('true'));
  } else {
    res.writeHead(405).end();
  }
});
// wrk keeps its connections for the whole run; Node's 5 s default would close idle ones mid-warm-up.
server.keepAliveTimeout = 60_000;
server.listen(port, LOOPBACK, () => {
  process.stdout.write(`${JSON.stringify({ msg: 'node:http baseline listening', port })}\n`);
});
process.once('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
