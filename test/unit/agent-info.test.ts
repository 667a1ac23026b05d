// Who the agent says it is: /v1/agent/members' Tags.build agrees with the version /v1/agent/self
// reports (Stats.build, as Consul's agent derives its build tag from the same parts) and with
// src/version.ts.
import { describe, expect, it } from 'vitest';
import { agentInfo } from '../../src/agent-info.js';
import { allowAllAuthorizer } from '../../src/acl/authorizer.js';
import type { Identity } from '../../src/acl/identity.js';
import { loadConfig } from '../../src/config/load.js';
import { FakeClock } from '../../src/core/clock.js';
import { Metrics } from '../../src/core/metrics.js';
import { brandHeaders } from '../../src/http/brand.js';
import { agentRoutes } from '../../src/http/handlers/agent.js';
import type { Reply } from '../../src/http/reply.js';
import type { MethodSpec } from '../../src/http/routes.js';
import { VERSION } from '../../src/version.js';
import { request } from './http/support.js';

const everyone: Identity = { authorizer: allowAllAuthorizer, accessorId: '', anonymous: true, namespace: 'default' };

async function get(path: string): Promise<unknown> {
  const config = loadConfig({ files: [], flags: {}, dev: true });
  const info = agentInfo(config, '11111111-2222-3333-4444-555555555555', new Date(0));
  const routes = agentRoutes({
    metrics: new Metrics(new FakeClock(0)),
    info,
    brand: brandHeaders('Consul'),
    config: () => config,
    reload: () => Promise.resolve(),
    stats: () => ({}),
    stateIndex: () => 42,
  });
  const method = routes.find((r) => r.path === path)?.methods.GET as MethodSpec;
  const reply = (await method.handler(request({ path }), everyone, undefined)) as Reply;
  return JSON.parse(Buffer.from(reply.body as Uint8Array | string).toString('utf8'));
}

describe('the build the agent reports', () => {
  it("is the same in /v1/agent/members' Tags.build, agent/self's Member and agent/self's Stats.build", async () => {
    const self = (await get('/v1/agent/self')) as {
      Member: { Tags: { build: string } };
      Stats: { build: { version: string; version_metadata: string; prerelease: string; revision: string } };
    };
    const members = (await get('/v1/agent/members')) as { Tags: { build: string } }[];
    const { version, version_metadata: metadata, prerelease, revision } = self.Stats.build;
    // As Consul's agent builds its tag: the version with its metadata, the prerelease, `:`, the revision.
    const expected = `${version}+${metadata}${prerelease}:${revision}`;
    expect(members.map((m) => m.Tags.build)).toEqual([expected]);
    expect(self.Member.Tags.build).toBe(expected);
    expect(expected.split(':')[0]).toContain(VERSION);
  });
});
