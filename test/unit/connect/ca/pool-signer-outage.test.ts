// The signing pool when no thread can start: the process stays up, leaves fail at once with
// CA_SIGNER_NO_THREAD (503), the outage is logged once, a thread is tried again with a growing
// delay, and signing resumes by itself once one starts. Once with a real EMFILE (this test
// process's own descriptor limit lowered), once with a worker file that refuses to load.
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { pemBlocks, toPem } from '../../../../src/connect/ca/encoding.js';
import { defaultWorkerFile, PoolSigner } from '../../../../src/connect/ca/pool-signer.js';
import { createRootCertificate, generateCaKey } from '../../../../src/connect/ca/x509.js';
import { readOpenFilesLimit } from '../../../../src/core/open-files.js';
import { giveBack, hasPrlimit, setOwnOpenFilesLimit, takeEveryDescriptor } from '../../../support/open-files.js';
import { recordingLogger, type RecordingLogger } from '../../../support/recording-logger.js';

const TD = '11111111-2222-3333-4444-555555555555.consul';
const FAST = { first: 20, max: 80 };

async function caTask(serial: bigint) {
  const key = await generateCaKey({ type: 'ec', bits: 256 });
  const der = createRootCertificate({
    key,
    serial: 1n,
    commonName: 'outage',
    uri: `spiffe://${TD}`,
    notBefore: Date.now(),
    notAfter: Date.now() + 3_600_000,
  });
  const ca = {
    id: `root-${serial}`,
    privateKeyPem: key.export({ type: 'pkcs8', format: 'pem' }) as string,
    rootCertPem: toPem(der, 'CERTIFICATE'),
  };
  return {
    ca,
    serial,
    uri: `spiffe://${TD}/ns/default/dc/dc1/svc/web`,
    nowMs: Date.now(),
    ttlMs: 3_600_000,
    trustDomain: TD,
    datacenter: 'dc1',
  };
}

/** Polls a condition each turn of the timers; the hang guard is the test's timeout. */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
}

const outageLines = (log: RecordingLogger) =>
  log.entries.filter((e) => e.level === 'error' && e.msg?.startsWith('no leaf-signing thread could start'));
const resumedLines = (log: RecordingLogger) =>
  log.entries.filter((e) => e.msg === 'a leaf-signing thread started again; signing resumes');

describe.runIf(hasPrlimit)('PoolSigner out of descriptors (EMFILE)', () => {
  const limit = readOpenFilesLimit()!;
  afterAll(() => setOwnOpenFilesLimit(limit.soft, limit.hard));

  it('stays up, fails leaves with CA_SIGNER_NO_THREAD, logs once, and signs again once descriptors are back', async () => {
    const task = await caTask(1n);
    setOwnOpenFilesLimit(readdirSync('/proc/self/fd').length + 64, limit.hard);
    const log = recordingLogger();
    const held = takeEveryDescriptor();
    let pool: PoolSigner;
    try {
      pool = new PoolSigner({ threads: 1, log, restartDelaysMs: FAST });
      await expect(pool.sign(task)).rejects.toMatchObject({
        code: 'CA_SIGNER_NO_THREAD',
        kind: 'unavailable',
        message: expect.stringContaining('EMFILE'),
      });
      await until(() => pool.unavailable);
      await expect(pool.sign(task)).rejects.toMatchObject({ code: 'CA_SIGNER_NO_THREAD' });
    } finally {
      giveBack(held);
    }
    await until(() => !pool.unavailable);
    const signed = await pool.sign(task);
    expect(new X509Certificate(pemBlocks(signed.certPem, 'CERTIFICATE')[0]!).serialNumber).toBe('01');
    expect(outageLines(log)).toHaveLength(1);
    expect(resumedLines(log)).toHaveLength(1);
    await pool.close();
  });
});

describe('PoolSigner whose threads cannot start', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-pool-'));
  const marker = join(dir, 'refuse');
  const attempts = join(dir, 'attempts');
  const workerFile = join(dir, 'refusing.worker.mjs');
  writeFileSync(
    workerFile,
    [
      "import { appendFileSync, existsSync } from 'node:fs';",
      `export * from ${JSON.stringify(pathToFileURL(defaultWorkerFile()).href)};`,
      `appendFileSync(${JSON.stringify(attempts)}, 'x');`,
      `if (existsSync(${JSON.stringify(marker)})) throw new Error('this thread refuses to start');`,
    ].join('\n'),
  );
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const attemptCount = () => (existsSync(attempts) ? readFileSync(attempts, 'utf8').length : 0);

  it('keeps signing on the running thread when another cannot start, resending what the failed one took, and says so once', async () => {
    if (existsSync(marker)) rmSync(marker);
    const log = recordingLogger();
    const pool = new PoolSigner({ threads: 2, workerFile, log, restartDelaysMs: FAST });
    try {
      await pool.schedulingPolicy(); // one thread runs
      writeFileSync(marker, '');
      const task = await caTask(4n);
      const before = attemptCount();
      for (let round = 0; round < 3; round++) {
        const signed = await Promise.all(Array.from({ length: 8 }, () => pool.sign(task)));
        expect(signed.every((m) => m.certPem.includes('BEGIN CERTIFICATE'))).toBe(true);
      }
      expect(attemptCount()).toBeGreaterThan(before);
      expect(pool.unavailable).toBe(false);
      expect(log.entries.filter((e) => e.msg === 'a leaf-signing thread failed; the others keep signing')).toHaveLength(
        1,
      );
      expect(outageLines(log)).toHaveLength(0);
    } finally {
      await pool.close();
    }
  });

  it('retries with a growing delay, logging the outage once, and resumes when a thread starts', async () => {
    writeFileSync(marker, '');
    const log = recordingLogger();
    const pool = new PoolSigner({ threads: 2, workerFile, log, restartDelaysMs: FAST });
    try {
      await until(() => pool.unavailable);
      const task = await caTask(2n);
      await expect(pool.sign(task)).rejects.toMatchObject({
        code: 'CA_SIGNER_NO_THREAD',
        kind: 'unavailable',
        message: expect.stringContaining('this thread refuses to start'),
      });
      await expect(pool.generateKey()).rejects.toMatchObject({ code: 'CA_SIGNER_NO_THREAD' });
      const before = attemptCount();
      await until(() => attemptCount() >= before + 3);
      expect(outageLines(log)).toHaveLength(1);
      expect(pool.unavailable).toBe(true);
      rmSync(marker);
      await until(() => !pool.unavailable);
      expect((await pool.sign(task)).certPem).toContain('BEGIN CERTIFICATE');
      expect(outageLines(log)).toHaveLength(1);
      expect(resumedLines(log)).toHaveLength(1);
    } finally {
      await pool.close();
    }
  });
});
