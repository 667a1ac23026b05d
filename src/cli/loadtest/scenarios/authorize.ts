// `authorize`: keep-alive POST /v1/agent/connect/authorize over a realistic intention set, seeded
// through the public API under a run-specific prefix and removed afterwards; `connection-rate`:
// the same calls, each on a new TCP connection.
import { ClientError, type ApiClient } from '../../client/api.js';
import { httpRequest } from '../../../loadgen/http-channel.js';
import type { FlagSpecs } from '../../client/flags.js';
import { exactIntentionPath } from '../../client/intention.js';
import { runRequestLoad } from '../request-load.js';
import { connectRoots } from './connect-roots.js';
import type { RunContext, Scenario, ScenarioReport } from '../scenario.js';
import { crossCheck, delta, readMetrics } from '../target-metrics.js';

const DECISIONS = ['svc.connect.authorize.allowed', 'svc.connect.authorize.denied'];

async function runAuthorize(ctx: RunContext, perConnection: boolean): Promise<ScenarioReport> {
  ctx.say('seeding intentions ...');
  const setup = await setUpAuthorize(
    ctx.api,
    ctx.prefix,
    ctx.flags,
    perConnection ? { ...ctx.headers, Connection: 'close' } : ctx.headers,
  );
  try {
    const before = await readMetrics(ctx.api);
    const measured = await runRequestLoad(ctx, {
      requests: setup.requests,
      connectionPerRequest: perConnection,
      answerKinds: { bytes: '"Authorized":true', ifFound: 'allow', otherwise: 'deny' },
    });
    const after = await readMetrics(ctx.api);
    // The target's count spans the warm-up too (read before any load), so the generator's does.
    const check = crossCheck(
      'svc.connect.authorize.allowed + denied',
      measured.aggregate.ok + measured.warmupOk,
      delta(before, after, DECISIONS),
    );
    return { measured, settings: { seededIntentions: setup.seeded, l7Intentions: setup.l7 }, crossCheck: check };
  } finally {
    await setup.cleanup();
  }
}

export const authorizeScenario: Scenario = {
  synopsis: 'Keep-alive authorize calls over a seeded intention set',
  flags: authorizeFlags(),
  unit: 'req/s',
  openLoop: true,
  run: (ctx) => runAuthorize(ctx, false),
};

export const connectionRateScenario: Scenario = {
  synopsis: 'A new TCP connection for every authorize call (Connection: close): connections per second',
  flags: authorizeFlags(),
  unit: 'connections/s',
  openLoop: true,
  run: (ctx) => runAuthorize(ctx, true),
};

function authorizeFlags(): FlagSpecs {
  return {
    intentions: { kind: 'int', doc: 'Intentions seeded (default 1000).' },
    destinations: { kind: 'int', doc: 'Destination services they spread over (default 100).' },
    'deny-percent': { kind: 'int', doc: 'Share of the intentions that deny, in percent (default 20).' },
    'l7-percent': {
      kind: 'int',
      doc: 'Share of the intentions with L7 permissions (HTTP path rules; authorize, having no HTTP request, answers them with a deny), in percent (default 10). A Consul target needs protocol "http" service-defaults for them, or 0.',
    },
    'miss-percent': { kind: 'int', doc: 'Share of calls from a source no intention names, in percent (default 10).' },
  };
}

interface AuthorizeSetup {
  /** The request bytes the connections send in turn. */
  readonly requests: readonly Buffer[];
  readonly seeded: number;
  /** Of them, with L7 permissions. */
  readonly l7: number;
  cleanup(): Promise<void>;
}

async function setUpAuthorize(
  api: ApiClient,
  prefix: string,
  flags: Readonly<Record<string, unknown>>,
  headers: Readonly<Record<string, string>>,
): Promise<AuthorizeSetup> {
  const count = Number(flags.intentions ?? 1000);
  const destinations = Math.max(1, Number(flags.destinations ?? 100));
  const denyPercent = Number(flags['deny-percent'] ?? 20);
  const missPercent = Number(flags['miss-percent'] ?? 10);
  const l7Percent = Number(flags['l7-percent'] ?? 10);
  if (denyPercent + l7Percent > 100)
    throw new ClientError(
      'CLI_LOADTEST_FLAG',
      `-deny-percent and -l7-percent add up to ${denyPercent + l7Percent}: at most 100`,
    );
  const trustDomain = (await connectRoots(api)).TrustDomain ?? 'consul';
  const probe = await api.call(
    'POST',
    '/v1/agent/connect/authorize',
    JSON.stringify({
      Target: `${prefix}-probe`,
      ClientCertURI: `spiffe://${trustDomain}/ns/default/dc/dc1/svc/${prefix}-probe-src`,
    }),
  );
  if (probe.status === 404 || probe.status === 405)
    throw new ClientError(
      'CLI_LOADTEST_TARGET',
      'The target does not serve POST /v1/agent/connect/authorize: is it an agent with Connect enabled?',
    );
  if (probe.status === 403)
    throw new ClientError(
      'CLI_LOADTEST_TARGET',
      `The token may not authorize (service:write on the destination): ${probe.text.trim()}`,
    );

  type Kind = 'allow' | 'deny' | 'l7';
  const kindOf = (i: number): Kind =>
    i % 100 < denyPercent ? 'deny' : i % 100 < denyPercent + l7Percent ? 'l7' : 'allow';
  const pairs: [string, string, Kind][] = [];
  for (let i = 0; i < count; i++)
    pairs.push([`${prefix}-src-${Math.floor(i / destinations)}`, `${prefix}-dst-${i % destinations}`, kindOf(i)]);
  const bodyOf = (kind: Kind): string =>
    JSON.stringify(
      kind === 'l7'
        ? {
            Permissions: [
              { Action: 'allow', HTTP: { PathPrefix: '/api/' } },
              { Action: 'deny', HTTP: { PathPrefix: '/' } },
            ],
          }
        : { Action: kind },
    );
  let next = 0;
  const created: [string, string][] = [];
  const seedOne = async (): Promise<void> => {
    while (next < pairs.length) {
      const [src, dst, kind] = pairs[next++] as [string, string, Kind];
      await api.expectOk('PUT', exactIntentionPath(src, dst), bodyOf(kind), 'seeding intentions');
      created.push([src, dst]);
    }
  };
  const cleanup = async (): Promise<void> => {
    let i = 0;
    const removeOne = async (): Promise<void> => {
      while (i < created.length) {
        const [src, dst] = created[i++] as [string, string];
        await api.call('DELETE', exactIntentionPath(src, dst));
      }
    };
    await Promise.all(Array.from({ length: 16 }, removeOne));
  };
  try {
    await Promise.all(Array.from({ length: 16 }, seedOne));
  } catch (err) {
    await cleanup();
    throw err;
  }

  const requests: Buffer[] = [];
  const bodies = Math.min(10_000, Math.max(pairs.length * 2, 100));
  for (let i = 0; i < bodies; i++) {
    const pair = pairs[i % pairs.length] as [string, string, string];
    const miss = i % 100 < missPercent;
    const source = miss ? `${prefix}-unknown-${i}` : pair[0];
    const body = JSON.stringify({
      Target: pair[1],
      ClientCertURI: `spiffe://${trustDomain}/ns/default/dc/dc1/svc/${source}`,
      ClientCertSerial: (i + 1).toString(16).padStart(2, '0'),
    });
    requests.push(httpRequest('POST', '/v1/agent/connect/authorize', headers, body));
  }
  return { requests, seeded: created.length, l7: pairs.filter((p) => p[2] === 'l7').length, cleanup };
}
