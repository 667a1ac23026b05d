// The real piscina pool against the compiled worker (dist/workers): leaves come back signed by
// the CA, the CA key crosses once per root and worker, failures keep their codes, and the threads
// run at the priority asked for.
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { getPriority } from 'node:os';
import { afterAll, describe, expect, it } from 'vitest';
import { pemBlocks, toPem } from '../../../../src/connect/ca/encoding.js';
import { PoolSigner } from '../../../../src/connect/ca/pool-signer.js';
import { MAX_BATCH } from '../../../../src/connect/ca/signing-protocol.js';
import { createRootCertificate, generateCaKey } from '../../../../src/connect/ca/x509.js';
import { procThreadsAvailable, SCHED_OTHER, threadPriorities, threadPriority } from '../../../support/proc-threads.js';

const TD = '11111111-2222-3333-4444-555555555555.consul';
const pool = new PoolSigner({ threads: 2 });
afterAll(() => pool.close());

async function ca(id: string) {
  const key = await generateCaKey({ type: 'ec', bits: 256 });
  const der = createRootCertificate({
    key,
    serial: 1n,
    commonName: id,
    uri: `spiffe://${TD}`,
    notBefore: Date.now(),
    notAfter: Date.now() + 3_600_000 * 1000,
  });
  return {
    id,
    privateKeyPem: key.export({ type: 'pkcs8', format: 'pem' }) as string,
    rootCertPem: toPem(der, 'CERTIFICATE'),
    cert: new X509Certificate(der),
  };
}

const task = (
  material: { id: string; privateKeyPem: string; rootCertPem: string },
  serial: bigint,
  service = 'web',
) => ({
  ca: { id: material.id, privateKeyPem: material.privateKeyPem, rootCertPem: material.rootCertPem },
  serial,
  uri: `spiffe://${TD}/ns/default/dc/dc1/svc/${service}`,
  nowMs: Date.now(),
  ttlMs: 3_600_000,
  trustDomain: TD,
  datacenter: 'dc1',
});

describe('PoolSigner', () => {
  it('signs leaves in the workers under each CA', async () => {
    const a = await ca('root-a');
    const b = await ca('root-b');
    const signed = await Promise.all([1n, 2n, 3n, 4n, 5n, 6n].map((n) => pool.sign(task(n % 2n === 0n ? a : b, n))));
    signed.forEach((m, i) => {
      const leaf = new X509Certificate(pemBlocks(m.certPem, 'CERTIFICATE')[0]!);
      const root = i % 2 === 1 ? a : b;
      expect(leaf.verify(root.cert.publicKey)).toBe(true);
      expect(leaf.serialNumber).toBe(`0${i + 1}`);
      expect(leaf.checkPrivateKey(createPrivateKey(m.privateKeyPem))).toBe(true);
      expect(m.privateKeyPem).toMatch(/^-----BEGIN EC PRIVATE KEY-----\n/);
    });
    expect(pool.threads).toBeGreaterThanOrEqual(1);
  });

  it('makes key pairs for a client agent in the workers, and signs a public key it did not make', async () => {
    const a = await ca('root-keys');
    const keys = await Promise.all([1, 2, 3].map(() => pool.generateKey()));
    expect(new Set(keys.map((k) => Buffer.from(k.spki).toString('hex'))).size).toBe(3);
    const signed = await pool.sign({ ...task(a, 9n), spki: keys[1]!.spki });
    expect(signed.privateKeyPem).toBe('');
    const leaf = new X509Certificate(pemBlocks(signed.certPem, 'CERTIFICATE')[0]!);
    expect(leaf.verify(a.cert.publicKey)).toBe(true);
    expect(leaf.checkPrivateKey(createPrivateKey(keys[1]!.privateKeyPem))).toBe(true);
  });

  it('sends a CA key to each worker once, not with every task', async () => {
    const a = await ca('root-once');
    const before = pool.caTransfers;
    const round = (n: number) =>
      Promise.all(Array.from({ length: 8 }, (_, i) => pool.sign(task(a, BigInt(100 + n * 8 + i)))));
    await round(0);
    // The first burst may race: tasks that reach a worker before it learnt the key are resent.
    const afterBurst = pool.caTransfers;
    expect(afterBurst - before).toBeGreaterThanOrEqual(1);
    expect(afterBurst - before).toBeLessThanOrEqual(8);
    for (let n = 1; n < 5; n++) await round(n);
    // 32 more tasks: at most one more transfer per worker thread (a thread started later).
    expect(pool.caTransfers - afterBurst).toBeLessThanOrEqual(2);
  });

  it('returns worker failures as AgentErrors with their codes', async () => {
    const a = await ca('root-c');
    await expect(
      pool.sign({ ...task(a, 9n), uri: 'spiffe://other.consul/ns/default/dc/dc1/svc/web' }),
    ).rejects.toMatchObject({
      code: 'CA_BAD_CSR',
      kind: 'invalid',
      message: `SPIFFE ID in CSR from a different trust domain: other.consul, we are ${TD}`,
    });
  });

  it('sends the leaves asked for in one turn together, MAX_BATCH a pool task at most, each result to its own caller', async () => {
    const one = new PoolSigner({ threads: 1 });
    try {
      const a = await ca('root-batch');
      const services = Array.from({ length: 40 }, (_, i) => `svc-${i}`);
      const signed = await Promise.all(services.map((service, i) => one.sign(task(a, BigInt(1000 + i), service))));
      signed.forEach((m, i) => {
        const leaf = new X509Certificate(pemBlocks(m.certPem, 'CERTIFICATE')[0]!);
        expect(leaf.serialNumber).toBe((1000 + i).toString(16).toUpperCase().padStart(4, '0'));
        expect(leaf.subjectAltName).toBe(`URI:spiffe://${TD}/ns/default/dc/dc1/svc/svc-${i}`);
        expect(leaf.checkPrivateKey(createPrivateKey(m.privateKeyPem))).toBe(true);
      });
      expect(one.batches).toBe(Math.ceil(40 / MAX_BATCH));
      expect(one.caTransfers).toBe(1);
    } finally {
      await one.close();
    }
  });

  it("spreads a turn's leaves over the threads", async () => {
    const a = await ca('root-spread');
    await pool.sign(task(a, 200n)); // the CA reaches a worker first
    const before = pool.batches;
    await Promise.all(Array.from({ length: 10 }, (_, i) => pool.sign(task(a, BigInt(201 + i)))));
    expect(pool.batches - before).toBeGreaterThanOrEqual(2); // 5 and 5 (and a resend to a thread without the CA)
    expect(pool.batches - before).toBeLessThanOrEqual(3);
  });

  it('fails only the bad leaf of a batch', async () => {
    const one = new PoolSigner({ threads: 1 });
    try {
      const a = await ca('root-mixed');
      const tasks = Array.from({ length: 12 }, (_, i) =>
        i === 7 ? { ...task(a, 50n + BigInt(i)), datacenter: 'dc2' } : task(a, 50n + BigInt(i)),
      );
      const outcomes = await Promise.allSettled(tasks.map((t) => one.sign(t)));
      expect(outcomes.map((o) => o.status)).toEqual(tasks.map((_, i) => (i === 7 ? 'rejected' : 'fulfilled')));
      expect((outcomes[7] as PromiseRejectedResult).reason).toMatchObject({
        code: 'CA_BAD_CSR',
        message: 'SPIFFE ID in CSR from a different datacenter: dc1, we are dc2',
      });
      expect(one.batches).toBeLessThan(12);
    } finally {
      await one.close();
    }
  });

  it('answers leaves still waiting for a worker when closed', async () => {
    const one = new PoolSigner({ threads: 1 });
    const a = await ca('root-closing');
    const settled = Promise.allSettled(Array.from({ length: 10 }, (_, i) => one.sign(task(a, BigInt(70 + i)))));
    await one.close();
    const outcomes = await settled;
    expect(
      outcomes.every((o) => o.status === 'rejected' && (o.reason as { code: string }).code === 'CA_SIGNER_UNAVAILABLE'),
    ).toBe(true);
  });

  it('refuses work once closed', async () => {
    const closed = new PoolSigner({ threads: 1 });
    await closed.close();
    const a = await ca('root-d');
    await expect(closed.sign(task(a, 1n))).rejects.toMatchObject({
      code: 'CA_SIGNER_UNAVAILABLE',
      kind: 'unavailable',
    });
  });
});

describe.runIf(procThreadsAvailable)('PoolSigner thread priority', () => {
  // This test's own thread: the process's priority, which the pool's threads start from.
  const processNice = getPriority();

  it('runs signing threads at nice +10 by default, and only them', async () => {
    const report = await pool.schedulingPolicy();
    expect(report).toEqual({
      priority: 'low',
      nice: Math.min(19, processNice + 10),
      tid: expect.any(Number),
      reason: undefined,
    });
    expect(threadPriority(process.pid, report.tid!)?.nice).toBe(report.nice);
    const threads = threadPriorities(process.pid);
    const lowered = threads.filter((t) => t.nice !== processNice);
    expect(lowered.length).toBeGreaterThanOrEqual(1);
    expect(lowered.length).toBeLessThanOrEqual(pool.threads);
    expect(threadPriority(process.pid, process.pid)?.nice).toBe(processNice);
    expect(threads.every((t) => t.policy === SCHED_OTHER)).toBe(true);
  });

  it("leaves them at the process's priority with 'normal'", async () => {
    const normal = new PoolSigner({ threads: 1, priority: 'normal' });
    try {
      const report = await normal.schedulingPolicy();
      expect(report).toEqual({ priority: 'normal', nice: processNice, tid: expect.any(Number), reason: undefined });
      expect(threadPriority(process.pid, report.tid!)?.nice).toBe(processNice);
    } finally {
      await normal.close();
    }
  });
});
