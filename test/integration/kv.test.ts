// /v1/kv against the real agent on the embedded store (the contract: support/kv-api-suite.ts).
import { startAgent } from './support/agent-process.js';
import { kvApiSuite } from './support/kv-api-suite.js';

kvApiSuite(() => startAgent({ config: { limits: { kv_max_value_size: 1024 } } }));
