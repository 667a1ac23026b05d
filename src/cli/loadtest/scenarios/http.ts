// `http`: one request, as wrk or vegeta send it, at any HTTP/1.1 server: the generator's own
// numbers without a scenario around them (no seeding, no cross-check with the agent's counters).
import type { FlagSpecs } from '../../client/flags.js';
import { httpRequest } from '../../../loadgen/http-channel.js';
import { runRequestLoad } from '../request-load.js';
import type { RunContext, Scenario, ScenarioReport } from '../scenario.js';

const flags: FlagSpecs = {
  path: { kind: 'string', doc: 'The path (and query) requested (default /v1/status/leader).' },
  method: { kind: 'string', doc: 'The method (default GET).' },
  body: { kind: 'string', doc: 'A request body, sent with every request.' },
};

async function run(ctx: RunContext): Promise<ScenarioReport> {
  const path = String(ctx.flags.path ?? '/v1/status/leader');
  const method = String(ctx.flags.method ?? 'GET').toUpperCase();
  const body = ctx.flags.body === undefined ? undefined : String(ctx.flags.body);
  const measured = await runRequestLoad(ctx, { requests: [httpRequest(method, path, ctx.headers, body)] });
  return { measured, settings: { path, method }, crossCheck: null };
}

export const httpScenario: Scenario = {
  synopsis: 'One request (-method, -path, -body) at any HTTP/1.1 server, as wrk or vegeta send it',
  flags,
  unit: 'req/s',
  openLoop: true,
  run,
};
