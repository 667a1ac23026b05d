// The naive Node peer of mesh-cpu.ts: node:tls requiring and verifying a client certificate
// against the mesh roots, then piping each connection to the application. No authorize, no
// metrics, no drain: the floor a Node terminator starts from.
// Usage: node mesh-naive-server.js <port> <cert.pem> <key.pem> <roots.pem> <app port>
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { createServer } from 'node:tls';
import { LOOPBACK } from '../support/ports.js';

const [portText, certFile, keyFile, rootsFile, appText] = process.argv.slice(2);
if (rootsFile === undefined || appText === undefined || certFile === undefined || keyFile === undefined) {
  process.stderr.write('usage: mesh-naive-server <port> <cert.pem> <key.pem> <roots.pem> <app port>\n');
  process.exit(2);
}
const server = createServer(
  {
    cert: readFileSync(certFile),
    key: readFileSync(keyFile),
    ca: readFileSync(rootsFile),
    requestCert: true,
    rejectUnauthorized: true,
  },
  (socket) => {
    const app = connect(Number(appText), LOOPBACK);
    socket.pipe(app).pipe(socket);
    socket.on('error', () => app.destroy());
    app.on('error', () => socket.destroy());
  },
);
server.on('tlsClientError', (_err, socket) => socket.destroy());
server.listen(Number(portText), LOOPBACK);
process.once('SIGTERM', () => process.exit(0));
