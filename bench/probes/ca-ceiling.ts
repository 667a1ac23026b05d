// The ceiling for the CA GETs (child process): bare uWS answering every GET with a fixed body of
// the size the agent's roots or leaf response has, with the same Content-Type and an index header,
// so a ratio compares the agent's own cost with uWS doing nothing but writing those bytes.
// Usage: node ca-ceiling.js <port> <roots body bytes> <leaf body bytes>
import uWS from '@based/uws';
import { LOOPBACK } from '../support/ports.js';

const [port, rootsBytes, leafBytes] = process.argv.slice(2).map(Number) as [number, number, number];
if (![port, rootsBytes, leafBytes].every((n) => Number.isInteger(n) && n > 0)) {
  process.stderr.write('usage: ca-ceiling <port> <roots body bytes> <leaf body bytes>\n');
  process.exit(2);
}

const body = (bytes: number): string => `{"x":"${'a'.repeat(Math.max(0, bytes - 8))}"}`;
const ROOTS = body(rootsBytes);
const LEAF = body(leafBytes);

const app = uWS
  .App()
  .get('/roots', (res) => {
    res.cork(() => res.writeHeader('Content-Type', 'application/json').writeHeader('X-Svc-Index', '12').end(ROOTS));
  })
  .get('/leaf', (res) => {
    res.cork(() => res.writeHeader('Content-Type', 'application/json').writeHeader('X-Svc-Index', '12').end(LEAF));
  });

app.listen(LOOPBACK, port, (listenSocket) => {
  if (listenSocket === false) {
    process.stderr.write(`ca-ceiling: cannot listen on ${LOOPBACK}:${port}\n`);
    process.exit(1);
  }
});
