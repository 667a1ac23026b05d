// A CheckSpec with every field at Go's zero value, for checks the agent makes itself.
import type { CheckSpec } from './model.js';

export function emptyCheckSpec(): CheckSpec {
  return {
    checkId: '',
    name: '',
    status: '',
    notes: '',
    scriptArgs: [],
    http: '',
    header: {},
    method: '',
    body: '',
    disableRedirects: false,
    tcp: '',
    udp: '',
    h2ping: '',
    grpc: '',
    grpcUseTls: false,
    osService: '',
    dockerContainerId: '',
    tlsServerName: '',
    tlsSkipVerify: false,
    aliasNode: '',
    aliasService: '',
    intervalMs: 0,
    timeoutMs: 0,
    ttlMs: 0,
    successBeforePassing: 0,
    failuresBeforeWarning: 0,
    failuresBeforeCritical: 0,
    deregisterCriticalServiceAfterMs: 0,
    outputMaxSize: 0,
  };
}
