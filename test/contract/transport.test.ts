// Runs the HTTP transport contract against each adapter, started on its own (not the agent).
import { startNodeServer } from '../../src/http/node-server.js';
import { startUwsServer, uwsNativeAvailable } from '../../src/http/uws-server.js';
import { describeTransportContract } from './transport.contract.js';

describeTransportContract('node:http', { start: startNodeServer });

if (uwsNativeAvailable()) {
  describeTransportContract('uWebSockets.js', {
    start: startUwsServer,
    noHttp10: 'uWS does not answer HTTP/1.0 (docs/decisions.md D18)',
    noHostAnswer: 'uWS closes an HTTP/1.1 request without Host unanswered (docs/decisions.md D18)',
  });
}
