// What every bare-uWS bench server (child process) does around its handlers: read its port from
// the command line, listen on loopback, say so on stdout, and close on SIGTERM.
import uWS, { type TemplatedApp } from '@based/uws';
import { LOOPBACK } from './ports.js';

/** The port argument (argv[2]); a usage line and exit 2 without a positive integer. */
export function peerPort(usage: string): number {
  const port = Number(process.argv[2]);
  if (!Number.isInteger(port) || port <= 0) {
    process.stderr.write(`usage: ${usage}\n`);
    process.exit(2);
  }
  return port;
}

/** Listens on LOOPBACK:port, writes `{"msg": message, "port": port}` once bound, exits 1 if it cannot. */
export function listenUntilTerm(app: TemplatedApp, port: number, name: string, message: string): void {
  app.listen(LOOPBACK, port, (listenSocket) => {
    if (listenSocket === false) {
      process.stderr.write(`${name}: cannot listen on ${LOOPBACK}:${port}\n`);
      process.exit(1);
    }
    process.stdout.write(`${JSON.stringify({ msg: message, port })}\n`);
    process.once('SIGTERM', () => {
      uWS.us_listen_socket_close(listenSocket);
      process.exit(0);
    });
  });
}
