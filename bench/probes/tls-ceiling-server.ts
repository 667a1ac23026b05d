// The HTTPS ceiling: a bare node:https server on the TLS stack the agent's HTTPS API uses, reading
// the body and answering a fixed authorize answer with the agent's headers. Nothing else runs.
// Usage: node tls-ceiling-server.js <port> <cert.pem> <key.pem>
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { LOOPBACK } from '../support/ports.js';

const [portText, certFile, keyFile] = process.argv.slice(2);
const port = Number(portText);
if (!Number.isInteger(port) || port <= 0 || certFile === undefined || keyFile === undefined) {
  process.stderr.write('usage: tls-ceiling-server <port> <cert.pem> <key.pem>\n');
  process.exit(2);
}

const ANSWER = JSON.stringify({
  Authorized: true,
  Reason: 'Matched L4 intention: "default/web" => "default/api" (allow)',
});
const server = createServer({ cert: readFileSync(certFile), key: readFileSync(keyFile) }, (req, res) => {
  req.on('data', () => {});
  req.on('end', () => {
    res.writeHead(200, {
      'Content-Type': 'application/json',
      'X-Svc-Default-ACL-Policy': 'allow',
      'Content-Length': Buffer.byteLength(ANSWER),
    });
    res.end(ANSWER);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(port, LOOPBACK, () =>
  process.stdout.write(`${JSON.stringify({ msg: 'tls ceiling listening', port })}\n`),
);
process.once('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
