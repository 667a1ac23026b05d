// The application behind every terminator of mesh-cpu.ts: it takes each connection and reads
// whatever comes, discarding it, so the bench measures the terminator and not the app.
// Usage: node mesh-app.js <port>
import { createServer } from 'node:net';
import { LOOPBACK } from '../support/ports.js';

const server = createServer((socket) => {
  socket.on('data', () => {});
  socket.on('error', () => {});
});
server.listen(Number(process.argv[2]), LOOPBACK);
process.once('SIGTERM', () => process.exit(0));
