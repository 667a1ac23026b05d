// User events as Consul fires and filters them: its checks and their texts, the gossip size limit,
// the node, service and tag filters, and its index (the UUID's halves XORed). And one agent's feed:
// rows written after it started, taken once each, in index order, filtered, 256 kept.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isAgentError } from '../../../src/core/errors.js';
import { silentLogger } from '../../../src/core/log.js';
import { EventFeed } from '../../../src/events/event-feed.js';
import {
  EVENTS_KEPT,
  EVENTS_TABLE,
  eventIndex,
  newUserEvent,
  passesFilters,
  type FireParams,
} from '../../../src/events/user-event.js';
import { openEmbeddedStore, type EmbeddedStore } from '../../../src/state/embedded/index.js';

const ID = '1c174870-85d7-4ae0-82ee-77bbd4ffcddd';

function refusal(params: FireParams): string {
  try {
    newUserEvent(params, ID, 0);
  } catch (err) {
    return isAgentError(err) ? `${err.code}: ${err.message}` : String(err);
  }
  return 'accepted';
}

describe('a user event as fired', () => {
  it('carries the payload as base64 (null when empty) and the filters given', () => {
    const event = newUserEvent({ name: 'deploy', payload: Buffer.from('v1.2'), service: 'web', tag: 'canary' }, ID, 0);
    expect(event).toEqual({
      ID,
      Name: 'deploy',
      Payload: 'djEuMg==',
      NodeFilter: '',
      ServiceFilter: 'web',
      TagFilter: 'canary',
      Version: 1,
      LTime: 0,
    });
    expect(newUserEvent({ name: 'x', payload: undefined }, ID, 0).Payload).toBeNull();
  });

  it('is refused as Consul refuses it: no name, a tag filter alone, a filter that is no regular expression, over 512 bytes', () => {
    expect(refusal({ name: '', payload: undefined })).toBe('EVENT_NAME_MISSING: Missing name');
    expect(refusal({ name: 'x', payload: undefined, tag: 'a' })).toBe(
      'EVENT_INVALID: Cannot provide tag filter without service filter',
    );
    expect(refusal({ name: 'x', payload: undefined, node: '(' })).toMatch(/^EVENT_INVALID: Invalid node filter/);
    expect(refusal({ name: 'x', payload: Buffer.alloc(512) })).toMatch(
      /^EVENT_TOO_LARGE: user event exceeds configured limit of 512 bytes/,
    );
    expect(refusal({ name: 'x', payload: Buffer.alloc(400) })).toBe('accepted');
  });

  it('passes an agent whose node matches and one of whose services (and its tags) match', () => {
    const event = (f: Partial<FireParams>) => newUserEvent({ name: 'x', payload: undefined, ...f }, ID, 0);
    const services = [{ name: 'web', tags: ['canary', 'v2'] }];
    expect(passesFilters(event({}), 'node-1', [])).toBe(true);
    expect(passesFilters(event({ node: '^node-' }), 'node-1', [])).toBe(true);
    expect(passesFilters(event({ node: '^db-' }), 'node-1', services)).toBe(false);
    expect(passesFilters(event({ service: 'we' }), 'node-1', services)).toBe(true);
    expect(passesFilters(event({ service: '^db$' }), 'node-1', services)).toBe(false);
    expect(passesFilters(event({ service: 'web', tag: '^v2$' }), 'node-1', services)).toBe(true);
    expect(passesFilters(event({ service: 'web', tag: '^v3$' }), 'node-1', services)).toBe(false);
  });

  it("indexes a list by its last event's ID as Consul's uuidToUint64 does", () => {
    expect(eventIndex(ID)).toBe(0x1c17487085d74ae0n ^ 0x82ee77bbd4ffcdddn);
  });
});

describe("an agent's event feed", () => {
  let store: EmbeddedStore;
  let feed: EventFeed | undefined;
  const services: { name: string; tags: string[] }[] = [];

  beforeEach(async () => {
    store = await openEmbeddedStore({ log: silentLogger });
  });
  afterEach(async () => {
    feed?.close();
    await store.close();
  });

  const fire = async (name: string, f: Partial<FireParams> = {}): Promise<string> => {
    const event = newUserEvent({ name, payload: undefined, ...f }, crypto.randomUUID(), 0);
    await store.commit([{ op: 'set', table: EVENTS_TABLE, key: event.ID, value: event }]);
    return event.ID;
  };
  const changed = (): Promise<void> => new Promise((resolve) => feed!.watchOnce(resolve));

  it('takes the events written after it started, once each, in index order, those its filters pass', async () => {
    await fire('before');
    feed = new EventFeed(store, { nodeName: 'node-1', services: () => services });
    const next = changed();
    const first = await fire('one');
    await next;
    await fire('elsewhere', { node: '^node-2$' });
    services.push({ name: 'web', tags: [] });
    const third = await fire('web only', { service: '^web$' });
    await new Promise((resolve) => setImmediate(resolve));
    const listed = feed.list();
    expect(listed.map((e) => e.ID)).toEqual([first, third]);
    expect(listed[0]!.LTime).toBeLessThan(listed[1]!.LTime);
    expect(feed.list('one').map((e) => e.Name)).toEqual(['one']);
  });

  it(`keeps the most recent ${EVENTS_KEPT}`, async () => {
    feed = new EventFeed(store, { nodeName: 'node-1', services: () => [] });
    const ids: string[] = [];
    for (let i = 0; i < EVENTS_KEPT + 10; i++) ids.push(await fire(`e${i}`));
    await new Promise((resolve) => setImmediate(resolve));
    expect(feed.list().map((e) => e.ID)).toEqual(ids.slice(10));
  });
});
