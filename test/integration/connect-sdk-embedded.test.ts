// The SDK with its agent embedded in the same process (createAgent()): leaf, roots, authorize and
// the instances to dial come from the agent's own objects. The agent never listens, so no HTTP
// request is made; authorize's calls are counted where they are answered.
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, type Agent } from '../../src/agent/index.js';
import { loadConfig } from '../../src/config/load.js';
import { silentLogger } from '../../src/core/log.js';
import { normalizeIntention } from '../../src/connect/intentions/validate.js';
import { readServiceDefinition } from '../../src/local/definition.js';
import { ConnectService } from '../../src/sdk/index.js';

describe('the SDK with an embedded agent', () => {
  let agent: Agent;
  let db: ConnectService;
  let web: ConnectService;
  let authorized = 0;

  beforeAll(async () => {
    agent = await createAgent(loadConfig({ files: [], flags: { node_name: 'embedded' }, dev: true }), {
      log: silentLogger,
    });
    const authorize = agent.authorize.bind(agent);
    (agent as { authorize: Agent['authorize'] }).authorize = (request, token) => {
      authorized++;
      return authorize(request, token);
    };
    db = new ConnectService({ name: 'db', agent });
    web = new ConnectService({ name: 'web', agent });
  });
  afterAll(async () => {
    db.close();
    web.close();
    await agent.close();
  });

  it('serves and dials through the mesh with no HTTP request', async () => {
    const server = await db.listen(0, '127.0.0.1', (socket) => socket.pipe(socket));
    const port = (server.address() as AddressInfo).port;
    await agent.local.registerService(
      readServiceDefinition({ Name: 'db', Port: port, Address: '127.0.0.1', Connect: { Native: true } }),
    );
    // Anti-entropy puts it in the catalog: wait for that event, not for a time.
    while (agent.catalog.instances('db', true).length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    const socket = await web.dial('db');
    socket.write('ping');
    const [echo] = (await once(socket, 'data')) as [Buffer];
    expect(echo.toString()).toBe('ping');
    socket.end();
    expect(authorized).toBe(1);
    expect(db.stats.accepted).toBe(1);
    expect(agent.listening).toBeUndefined();
  });

  it('closes an established connection once an intention denies its client, and admits again once allowed', async () => {
    const socket = await web.dial('db');
    socket.write('held');
    expect(((await once(socket, 'data')) as [Buffer])[0].toString()).toBe('held');
    const closed = once(socket, 'close');
    const intention = (action: string) =>
      agent.intentions.upsertExact(
        normalizeIntention({ SourceName: 'web', DestinationName: 'db', Action: action }, 'default'),
      );
    await intention('deny');
    await closed;
    expect(db.stats.closedOnDeny).toBe(1);
    await expect(web.dial('db').then((s) => once(s, 'close'))).resolves.toBeDefined();
    expect(db.stats.refused.denied).toBe(1);
    await intention('allow');
    const again = await web.dial('db');
    again.write('again');
    expect(((await once(again, 'data')) as [Buffer])[0].toString()).toBe('again');
    again.end();
  });
});
