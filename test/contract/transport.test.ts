// Runs the HTTP transport contract against each adapter, started on its own (not the agent), and
// against each serving a client agent's routes, whose writes a server agent's runner answers.
import { startNodeServer } from '../../src/http/node-server.js';
import { startUwsServer, uwsBuild } from '../../src/http/uws-server.js';
import { describeTransportContract } from './transport.contract.js';

describeTransportContract('node:http', { start: startNodeServer, parser: 'llhttp' });
describeTransportContract('node:http, writes forwarded', {
  start: startNodeServer,
  parser: 'llhttp',
  writesForwarded: true,
});

if (uwsBuild().loaded) {
  describeTransportContract('uWebSockets.js', { start: startUwsServer, parser: 'uws' });
  describeTransportContract('uWebSockets.js, writes forwarded', {
    start: startUwsServer,
    parser: 'uws',
    writesForwarded: true,
  });
}
