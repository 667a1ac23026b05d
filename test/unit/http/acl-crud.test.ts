// The reads, lists and deletes the /v1/acl/* resources share (src/http/handlers/acl-crud.ts), over
// an embedded store: a path that names nothing is Consul's 400 before anything is read, a row is
// answered with its key's index (or the index a resource declares), a missing row as the resource
// says, a list with its table's index, a delete with `true`; the ACL rule asks for nothing when the
// path names nothing. A blocking read parks until its row changes.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../src/core/clock.js';
import { silentLogger } from '../../../src/core/log.js';
import { BlockingQueries, Parked } from '../../../src/http/blocking.js';
import { brandHeaders } from '../../../src/http/brand.js';
import { errorReply } from '../../../src/http/dispatch.js';
import { ACL_READ, aclCrud, notFound, unlessEmpty } from '../../../src/http/handlers/acl-crud.js';
import type { Reply } from '../../../src/http/reply.js';
import type { Outcome } from '../../../src/http/routes.js';
import { openEmbeddedStore, type EmbeddedStore } from '../../../src/state/embedded/index.js';
import type { Row } from '../../../src/state/types.js';
import { agentErrorOf, agentRejectionOf, answerOf } from '../../support/errors.js';
import { request } from './support.js';

const TABLE = 'acl-policies';
let store: EmbeddedStore;
let crud: ReturnType<typeof aclCrud>;

beforeEach(async () => {
  store = await openEmbeddedStore({ log: silentLogger });
  const blocking = new BlockingQueries(store, new FakeClock(), (err, path) => errorReply(err, silentLogger, path));
  crud = aclCrud({
    store,
    blocking,
    brand: brandHeaders('Consul'),
    limits: { defaultQueryTimeMs: 300_000, maxQueryTimeMs: 600_000 },
    random: () => 0,
  });
});
afterEach(async () => {
  await store.close();
});

const set = (key: string, value: string) => store.commit([{ op: 'set', table: TABLE, key, value }]);
const get = (rest: string, rawQuery = '') => request({ method: 'GET', path: `/v1/acl/policy/${rest}`, rawQuery }, rest);
const headerOf = (reply: Reply, name: string) => reply.headers?.find(([n]) => n === name)?.[1];
const now = (outcome: Outcome): Reply => {
  if (outcome instanceof Parked || outcome instanceof Promise) throw new Error('expected an answer at once');
  return outcome;
};

const readById = () =>
  crud.readByRest('ACL_MISSING_POLICY_ID', (id) => ({
    table: TABLE,
    key: id,
    find: () => store.get<string>(TABLE, id),
    json: (row: Row<string>) => ({ ID: row.key, Value: row.value }),
    absent: notFound('ACL_POLICY_READ_NOT_FOUND'),
  }));

describe('aclCrud', () => {
  it("reads a row by the path's ID with its key's index; a missing one as the resource answers it", async () => {
    await set('a', 'one');
    await set('b', 'two');
    const read = readById();
    const found = now(read(get('a')));
    expect([found.status, found.body, headerOf(found, 'X-Consul-Index')]).toEqual([
      200,
      '{"ID":"a","Value":"one"}',
      '1',
    ]);
    const missing = now(read(get('zzz')));
    expect([missing.status, missing.body]).toEqual(answerOf('ACL_POLICY_READ_NOT_FOUND'));
  });

  it('refuses a path that names nothing at once, before any read', () => {
    expect(agentErrorOf(() => readById()(get(''))).code).toBe('ACL_MISSING_POLICY_ID');
  });

  it('parks a blocking read until its row changes', async () => {
    await set('a', 'one');
    const outcome = readById()(get('a', 'index=1'));
    expect(outcome).toBeInstanceOf(Parked);
    const answered = (outcome as Parked).wait();
    await set('a', 'uno');
    const reply = await answered;
    expect([reply.body, headerOf(reply, 'X-Consul-Index')]).toEqual(['{"ID":"a","Value":"uno"}', '2']);
  });

  it("lists with the table's index, or the one a resource gives", async () => {
    await set('a', 'one');
    const rows = () => store.list<string>(TABLE, '').map((r) => r.value);
    const listed = now(crud.list(get(''), TABLE, rows));
    expect([listed.body, headerOf(listed, 'X-Consul-Index')]).toEqual(['["one"]', '1']);
    const wider = now(crud.list(get(''), TABLE, rows, () => 42));
    expect(headerOf(wider, 'X-Consul-Index')).toBe('42');
  });

  it("deletes the path's ID and answers true; a path that names nothing rejects, deleting nothing", async () => {
    await set('a', 'one');
    const removed: string[] = [];
    const del = crud.deleteByRest('ACL_MISSING_POLICY_ID', async (id) => {
      removed.push(id);
      await store.commit([{ op: 'delete', table: TABLE, key: id }]);
    });
    const reply = await del(request({ method: 'DELETE' }, 'a'));
    expect([reply.status, reply.body]).toEqual([200, 'true']);
    expect(store.get(TABLE, 'a')).toBeUndefined();
    expect((await agentRejectionOf(del(request({ method: 'DELETE' }, ''))))[0]).toBe('ACL_MISSING_POLICY_ID');
    expect(removed).toEqual(['a']);
  });

  it('asks for nothing when the path names nothing, else for the permission', () => {
    expect(unlessEmpty(ACL_READ)(request({}, ''))).toBe('none');
    expect(unlessEmpty(ACL_READ)(request({}, 'x'))).toBe(ACL_READ);
  });
});
