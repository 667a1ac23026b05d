// The baseline a user would otherwise pick (child process): the same authorize decision, from the
// same embedded agent and the same 10,000 intentions, served by node:http the ordinary way:
// gather the body, JSON.parse, agent.authorize(), JSON.stringify. Errors answer as the agent does.
// Usage: node authorize-node-server.js <port>
import { createServer } from 'node:http';
import { isAgentError } from '../../src/core/errors.js';
import { LOOPBACK } from '../support/ports.js';
import { seededAgent } from '../micro/authorize.js';

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port <= 0) {
  process.stderr.write('usage: authorize-node-server <port>\n');
  process.exit(2);
}

const STATUS: Record<string, number> = { invalid: 400, 'permission-denied': 403 };
const agent = await seededAgent();

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Parameters<typeof agent.authorize>[0];
      const result = JSON.stringify(agent.authorize(body));
      res.writeHead(200, {
        'Content-Type': 'application/json',
        'X-Svc-Default-ACL-Policy': 'allow',
        'Content-Length': Buffer.byteLength(result),
      });
      res.end(result);
    } catch (err) {
      const status = isAgentError(err) ? (STATUS[err.kind] ?? 500) : 400;
      res
        .writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8' })
        .end(err instanceof Error ? err.message : String(err));
    }
  });
});
// wrk keeps its connections for the whole run; Node's 5 s default would close idle ones mid-warm-up.
server.keepAliveTimeout = 60_000;
server.listen(port, LOOPBACK, () => {
  process.stdout.write(`${JSON.stringify({ msg: 'node:http authorize listening', port })}\n`);
});
process.once('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
