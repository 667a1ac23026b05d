// Runs the HTTP transport contract against each adapter, started on its own (not the agent).
import { startNodeServer } from '../../src/http/node-server.js';
import { startUwsServer, uwsBuild } from '../../src/http/uws-server.js';
import { describeTransportContract } from './transport.contract.js';

describeTransportContract('node:http', { start: startNodeServer, parser: 'llhttp' });

if (uwsBuild().loaded) {
  describeTransportContract('uWebSockets.js', { start: startUwsServer, parser: 'uws' });
}
