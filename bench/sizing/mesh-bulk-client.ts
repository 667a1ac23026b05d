// The bulk client of mesh-cpu.ts: one mTLS connection to a terminator, `megabytes` MB written in
// 64 KiB chunks as fast as the connection takes them, then closed. Prints the bytes written.
// Usage: node mesh-bulk-client.js <port> <cert.pem> <key.pem> <roots.pem> <megabytes>
import { readFileSync } from 'node:fs';
import { once } from 'node:events';
import { connect } from 'node:tls';
import { LOOPBACK } from '../support/ports.js';

const [portText, certFile, keyFile, rootsFile, megabytesText] = process.argv.slice(2);
if (certFile === undefined || keyFile === undefined || rootsFile === undefined || megabytesText === undefined) {
  process.stderr.write('usage: mesh-bulk-client <port> <cert.pem> <key.pem> <roots.pem> <megabytes>\n');
  process.exit(2);
}
const CHUNK = Buffer.alloc(64 * 1024, 7);
const total = Number(megabytesText) * 1e6;
const socket = connect({
  host: LOOPBACK,
  port: Number(portText),
  cert: readFileSync(certFile),
  key: readFileSync(keyFile),
  ca: readFileSync(rootsFile),
  // The terminators present the db leaf, whose SAN is a SPIFFE URI, not a host name.
  checkServerIdentity: () => undefined,
});
await once(socket, 'secureConnect');
let written = 0;
while (written < total) {
  written += CHUNK.length;
  if (!socket.write(CHUNK)) await once(socket, 'drain');
}
socket.end();
await once(socket, 'close');
process.stdout.write(`${written}\n`);
