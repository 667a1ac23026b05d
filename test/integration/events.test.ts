// User events on one agent as Consul's clients use them: /v1/event/fire/:name answers the event it
// fired; /v1/event/list lists them oldest first, by ?name, and blocks on Consul's event index (a
// query at the current index waits for the next event, and is answered by it); filters that do not
// match this agent keep an event off its list; with ACLs, event:write to fire and event:read to see.
// `svc-agent event` fires one as `consul event` does.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startAgent, type AgentProcess } from './support/agent-process.js';

const ROOT = 'events-root';

interface Event {
  ID: string;
  Name: string;
  Payload: string | null;
  LTime: number;
}

describe('user events', () => {
  let agent: AgentProcess;
  let reader: string;

  const call = async (method: string, path: string, body?: string, token = ROOT): Promise<Response> =>
    fetch(`${agent.url}${path}`, {
      method,
      ...(body === undefined ? {} : { body }),
      headers: { 'X-Svc-Token': token },
    });
  const fire = async (name: string, query = '', payload?: string): Promise<Event> => {
    const res = await call('PUT', `/v1/event/fire/${name}${query}`, payload);
    expect(res.status, await res.clone().text()).toBe(200);
    return (await res.json()) as Event;
  };
  const list = async (query = '', token = ROOT): Promise<{ events: Event[]; index: string; filtered: boolean }> => {
    const res = await call('GET', `/v1/event/list${query}`, undefined, token);
    expect(res.status).toBe(200);
    return {
      events: (await res.json()) as Event[],
      index: res.headers.get('X-Svc-Index') ?? '',
      filtered: res.headers.get('X-Svc-Results-Filtered-By-ACLs') === 'true',
    };
  };

  beforeAll(async () => {
    agent = await startAgent({
      args: ['-node', 'events-node'],
      config: { acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: ROOT } } },
    });
    const policy = await call(
      'PUT',
      '/v1/acl/policy',
      JSON.stringify({ Name: 'deploys', Rules: 'event "deploy" { policy = "read" }' }),
    );
    expect(policy.status).toBe(200);
    const token = await call('PUT', '/v1/acl/token', JSON.stringify({ Policies: [{ Name: 'deploys' }] }));
    reader = ((await token.json()) as { SecretID: string }).SecretID;
  });
  afterAll(() => agent?.stop());

  it('lists what was fired, oldest first, with its payload; the index is 1 while there is none', async () => {
    expect(await list()).toEqual({ events: [], index: '1', filtered: false });
    const deploy = await fire('deploy', '', 'v1.2');
    expect(deploy).toMatchObject({ Name: 'deploy', Payload: Buffer.from('v1.2').toString('base64'), LTime: 0 });
    const other = await fire('restart');
    const { events, index } = await list();
    expect(events.map((e) => e.ID)).toEqual([deploy.ID, other.ID]);
    expect(events[0]!.LTime).toBeLessThan(events[1]!.LTime);
    const hex = other.ID.replaceAll('-', '');
    expect(index).toBe(String(BigInt(`0x${hex.slice(0, 16)}`) ^ BigInt(`0x${hex.slice(16)}`)));
    expect((await list('?name=deploy')).events.map((e) => e.ID)).toEqual([deploy.ID]);
  });

  it('parks a list at the current index until the next event, which answers it', async () => {
    const { index } = await list();
    const parked = list(`?index=${index}&wait=30s`);
    let answered = false;
    void parked.then(() => (answered = true));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(answered).toBe(false);
    const next = await fire('wake');
    expect((await parked).events.at(-1)!.ID).toBe(next.ID);
    // Consul's index is not monotonic: any other index answers at once.
    expect((await list('?index=12345&wait=30s')).events.at(-1)!.ID).toBe(next.ID);
  });

  it('keeps an event whose filters do not match this agent off its list', async () => {
    const elsewhere = await fire('elsewhere', '?node=^other-node$');
    const nowhere = await fire('nowhere', '?service=^no-such-service$');
    const here = await fire('here', '?node=^events-');
    const ids = (await list()).events.map((e) => e.ID);
    expect(ids).toContain(here.ID);
    expect(ids).not.toContain(elsewhere.ID);
    expect(ids).not.toContain(nowhere.ID);
  });

  it('says what is wrong with a fire: no name, a tag filter alone, a payload over 512 bytes', async () => {
    const answer = async (path: string, body?: string): Promise<[number, string]> => {
      const res = await call('PUT', path, body);
      return [res.status, (await res.text()).trim()];
    };
    expect(await answer('/v1/event/fire/')).toEqual([400, 'Missing name']);
    expect(await answer('/v1/event/fire/x?tag=a')).toEqual([400, 'Cannot provide tag filter without service filter']);
    const [status, text] = await answer('/v1/event/fire/x', 'x'.repeat(600));
    expect(status).toBe(413);
    expect(text).toMatch(/^user event exceeds configured limit of 512 bytes/);
  });

  it('needs event:write to fire, and lists only the events the token may read, saying so', async () => {
    const denied = await call('PUT', '/v1/event/fire/deploy', undefined, reader);
    expect(denied.status).toBe(403);
    const seen = await list('', reader);
    expect(seen.events.length).toBeGreaterThan(0);
    expect(seen.events.every((e) => e.Name === 'deploy')).toBe(true);
    expect(seen.filtered).toBe(true);
  });

  it('fires one from the CLI as consul event does, printing its ID; no name is one line, exit 1', async () => {
    const flags = ['-http-addr', agent.url, '-token', ROOT];
    const fired = await runCli(['event', ...flags, '-name', 'from-cli', '-node', '^events-', 'the payload']);
    expect(fired.code, fired.stderr).toBe(0);
    const id = /^Event ID: ([0-9a-f-]{36})\n$/.exec(fired.stdout)?.[1];
    const listed = (await list('?name=from-cli')).events;
    expect(listed.map((e) => [e.ID, e.Payload])).toEqual([[id, Buffer.from('the payload').toString('base64')]]);
    const unnamed = await runCli(['event', ...flags]);
    expect([unnamed.code, unnamed.stdout]).toEqual([1, '']);
    expect(unnamed.stderr).toMatch(/^Event name must be specified\n/);
  });
});
