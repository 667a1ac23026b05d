// ConfigEntries over the embedded store: upsert and delete with and without CAS, lists in name
// order, and service-intentions as its destination's intention rows, written and read through
// both APIs with the authorize decision following (docs/decisions.md#config-entries).
import { afterEach, describe, expect, it } from 'vitest';
import type { GoStruct } from '../../../src/config-entries/decode.js';
import { ConfigEntries } from '../../../src/config-entries/entries.js';
import { decodeConfigEntry, normalizeAndValidate } from '../../../src/config-entries/model.js';
import type { KindSpec } from '../../../src/config-entries/kind.js';
import { decide } from '../../../src/connect/authorize.js';
import { intentionJson } from '../../../src/connect/intentions/model.js';
import { IntentionStore } from '../../../src/connect/intentions/store.js';
import { normalizeIntention } from '../../../src/connect/intentions/validate.js';
import type { SpiffeService } from '../../../src/connect/spiffe.js';
import { FakeClock } from '../../../src/core/clock.js';
import { silentLogger } from '../../../src/core/log.js';
import { openEmbeddedStore, type EmbeddedStore } from '../../../src/state/embedded/index.js';

const open: { store: EmbeddedStore; intentions: IntentionStore }[] = [];

async function setUp(): Promise<{ store: EmbeddedStore; intentions: IntentionStore; entries: ConfigEntries }> {
  const clock = new FakeClock(Date.parse('2024-05-01T10:00:00Z'));
  const store = await openEmbeddedStore({ log: silentLogger, clock });
  const intentions = new IntentionStore(store, clock);
  open.push({ store, intentions });
  return { store, intentions, entries: new ConfigEntries(store, intentions) };
}

afterEach(async () => {
  for (const { store, intentions } of open.splice(0)) {
    intentions.close();
    await store.close();
  }
});

function entry(body: Record<string, unknown>): { spec: KindSpec; entry: GoStruct } {
  const decoded = decodeConfigEntry(body);
  if (decoded.spec.kind === 'service-intentions' && decoded.entry.Namespace === '') decoded.entry.Namespace = 'default';
  normalizeAndValidate(decoded.spec, decoded.entry);
  return decoded;
}

const caller = (service: string): SpiffeService => ({
  kind: 'service',
  host: 'td',
  partition: 'default',
  namespace: 'default',
  datacenter: 'dc1',
  service,
});

describe('config entries of the table', () => {
  it('upserts, reads, lists by name and deletes', async () => {
    const { entries } = await setUp();
    for (const name of ['web', 'api', 'db']) {
      const e = entry({ Kind: 'service-defaults', Name: name, Protocol: 'http' });
      expect(await entries.apply(e.spec, e.entry)).toBe(true);
    }
    expect(entries.list('service-defaults').map((v) => v.entry.Name)).toEqual(['api', 'db', 'web']);
    expect(entries.list('proxy-defaults')).toEqual([]);
    const web = entries.get('service-defaults', 'web', 'default');
    expect(web?.entry.Protocol).toBe('http');
    expect(web?.createIndex).toBe(web?.modifyIndex);
    expect(await entries.delete('service-defaults', 'web', 'default')).toBe(true);
    expect(entries.get('service-defaults', 'web', 'default')).toBeUndefined();
    expect(await entries.delete('service-defaults', 'web', 'default')).toBe(true);
  });

  it('applies a CAS write only at the ModifyIndex it names (0: only a new entry)', async () => {
    const { entries } = await setUp();
    const e = entry({ Kind: 'proxy-defaults', Config: { protocol: 'http' } });
    expect(await entries.apply(e.spec, e.entry, 5)).toBe(false);
    expect(await entries.apply(e.spec, e.entry, 0)).toBe(true);
    expect(await entries.apply(e.spec, e.entry, 0)).toBe(false);
    const first = entries.get('proxy-defaults', 'global', 'default');
    expect(await entries.apply(e.spec, e.entry, first!.modifyIndex + 1)).toBe(false);
    expect(await entries.apply(e.spec, e.entry, first!.modifyIndex)).toBe(true);
    const second = entries.get('proxy-defaults', 'global', 'default');
    expect(second!.modifyIndex).toBeGreaterThan(first!.modifyIndex);
    expect(second!.createIndex).toBe(first!.createIndex);
    expect(await entries.delete('proxy-defaults', 'global', 'default', first!.modifyIndex)).toBe(false);
    expect(await entries.delete('proxy-defaults', 'global', 'default', second!.modifyIndex)).toBe(true);
    expect(await entries.delete('proxy-defaults', 'global', 'default', second!.modifyIndex)).toBe(false);
  });

  it('reports each entry its own index for blocking, the kind its prefix', async () => {
    const { entries } = await setUp();
    const web = entry({ Kind: 'service-defaults', Name: 'web' });
    await entries.apply(web.spec, web.entry);
    const webIndex = entries.entryWatch('service-defaults', 'web', 'default').index();
    const db = entry({ Kind: 'service-defaults', Name: 'db' });
    await entries.apply(db.spec, db.entry);
    expect(entries.entryWatch('service-defaults', 'web', 'default').index()).toBe(webIndex);
    expect(entries.listWatch('service-defaults').index()).toBeGreaterThan(webIndex);
  });
});

describe('service-intentions: one source of truth with the intentions table', () => {
  it('an entry written is each source an intention, and authorize follows it', async () => {
    const { entries, intentions } = await setUp();
    const e = entry({
      Kind: 'service-intentions',
      Name: 'db',
      Meta: { owner: 'team-a' },
      Sources: [
        { Name: '*', Action: 'deny' },
        { Name: 'web', Action: 'allow', Description: 'front end' },
      ],
    });
    expect(await entries.apply(e.spec, e.entry)).toBe(true);
    const listed = intentions.current().all.map((i) => intentionJson(i.row));
    expect(listed).toMatchObject([
      {
        SourceName: 'web',
        DestinationName: 'db',
        Action: 'allow',
        Precedence: 9,
        Description: 'front end',
        Meta: { owner: 'team-a' },
      },
      { SourceName: '*', DestinationName: 'db', Action: 'deny', Precedence: 8 },
    ]);
    expect(decide(intentions.current(), 'default', 'db', caller('web'), false).result.Authorized).toBe(true);
    expect(decide(intentions.current(), 'default', 'db', caller('api'), true).result.Authorized).toBe(false);

    // Rewritten without `web`: its intention goes, and authorize follows at once.
    const next = entry({ Kind: 'service-intentions', Name: 'db', Sources: [{ Name: '*', Action: 'deny' }] });
    await entries.apply(next.spec, next.entry);
    expect(intentions.current().all).toHaveLength(1);
    expect(decide(intentions.current(), 'default', 'db', caller('web'), true).result.Authorized).toBe(false);
  });

  it('an intention written through /exact or the ID API shows in the entry, after those written before it', async () => {
    const { entries, intentions } = await setUp();
    const e = entry({ Kind: 'service-intentions', Name: 'db', Sources: [{ Name: 'web', Action: 'allow' }] });
    await entries.apply(e.spec, e.entry);
    await intentions.upsertExact(
      normalizeIntention({ SourceName: 'api', DestinationName: 'db', Action: 'deny' }, 'default'),
    );
    const id = await intentions.createLegacy(
      normalizeIntention({ SourceName: 'batch', DestinationName: 'db', Action: 'deny', Meta: { m: '1' } }, 'default'),
    );
    const view = entries.get('service-intentions', 'db', 'default');
    expect(view?.entry.Sources).toMatchObject([
      { Name: 'web', Action: 'allow', LegacyID: '' },
      { Name: 'api', Action: 'deny', LegacyID: '' },
      { Name: 'batch', Action: 'deny', LegacyID: id, LegacyMeta: { m: '1' }, LegacyCreateTime: '2024-05-01T10:00:00Z' },
    ]);
    expect(entries.list('service-intentions').map((v) => v.entry.Name)).toEqual(['db']);

    // A CAS write must name the entry's ModifyIndex: the last change under the destination.
    const modifyIndex = view!.modifyIndex;
    await intentions.deleteExact('default', 'db', 'default', 'api');
    expect(entries.get('service-intentions', 'db', 'default')!.modifyIndex).toBeGreaterThan(modifyIndex);
    const replace = entry({ Kind: 'service-intentions', Name: 'db', Sources: [{ Name: 'web', Action: 'deny' }] });
    expect(await entries.apply(replace.spec, replace.entry, modifyIndex)).toBe(false);
    const current = entries.get('service-intentions', 'db', 'default')!.modifyIndex;
    expect(await entries.apply(replace.spec, replace.entry, current)).toBe(true);
    expect(intentions.current().byId.size).toBe(0);
    expect(entries.get('service-intentions', 'db', 'default')?.entry.Sources).toMatchObject([
      { Name: 'web', Action: 'deny' },
    ]);
  });

  it('deleting the entry deletes its intentions; CAS 0 creates only a new one', async () => {
    const { entries, intentions } = await setUp();
    const e = entry({ Kind: 'service-intentions', Name: 'db', Sources: [{ Name: 'web', Action: 'allow' }] });
    expect(await entries.apply(e.spec, e.entry, 0)).toBe(true);
    expect(await entries.apply(e.spec, e.entry, 0)).toBe(false);
    const index = entries.get('service-intentions', 'db', 'default')!.modifyIndex;
    expect(await entries.delete('service-intentions', 'db', 'default', index + 1)).toBe(false);
    expect(await entries.delete('service-intentions', 'db', 'default')).toBe(true);
    expect(intentions.current().all).toHaveLength(0);
    expect(entries.get('service-intentions', 'db', 'default')).toBeUndefined();
    expect(await entries.delete('service-intentions', 'db', 'default', 0)).toBe(false);
  });

  it('keeps namespaces apart (docs/decisions.md D2)', async () => {
    const { entries, intentions } = await setUp();
    const e = entry({
      Kind: 'service-intentions',
      Name: 'db',
      Namespace: 'team',
      Sources: [
        { Name: 'web', Action: 'allow' },
        { Name: 'web', Namespace: 'default', Action: 'deny' },
      ],
    });
    await entries.apply(e.spec, e.entry);
    expect(
      intentions
        .current()
        .all.map((i) => `${i.row.value.SourceNS}/${i.row.value.SourceName}`)
        .sort(),
    ).toEqual(['default/web', 'team/web']);
    expect(entries.get('service-intentions', 'db', 'default')).toBeUndefined();
    expect(entries.get('service-intentions', 'db', 'team')?.entry.Namespace).toBe('team');
  });
});
