import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TlsConfig } from '../../../src/config/types.js';
import { readTlsCredentials } from '../../../src/http/tls-credentials.js';
import { makeTlsFiles, type TlsFiles } from '../../support/tls-files.js';

let files: TlsFiles;
beforeAll(async () => {
  files = await makeTlsFiles();
});
afterAll(() => files.remove());

const config = (over: Partial<TlsConfig> = {}): TlsConfig => ({
  caFile: files.caFile,
  certFile: files.certFile,
  keyFile: files.keyFile,
  verifyIncoming: false,
  minVersion: 'TLSv1_2',
  ...over,
});

describe('readTlsCredentials', () => {
  it('reads the files and maps Consul version names and verify_incoming onto node:tls options', async () => {
    const c = await readTlsCredentials(config({ verifyIncoming: true, minVersion: 'TLSv1_3' }));
    expect(c.cert.toString()).toContain('BEGIN CERTIFICATE');
    expect(c.ca?.toString()).toContain('BEGIN CERTIFICATE');
    expect(c).toMatchObject({ requestCert: true, rejectUnauthorized: true, minVersion: 'TLSv1.3' });
    const old = await readTlsCredentials(config({ caFile: undefined, minVersion: 'TLSv1_0' }));
    expect(old).toMatchObject({ minVersion: 'TLSv1', ciphers: 'DEFAULT:@SECLEVEL=0' });
    expect(c.ciphers).toBeUndefined();
  });

  it('names a missing file', async () => {
    const missing = join(files.dir, 'nope.pem');
    await expect(readTlsCredentials(config({ certFile: missing }))).rejects.toMatchObject({
      code: 'TLS_FILES_INVALID',
      message: `HTTPS: tls.defaults.cert_file ${missing}: no such file`,
    });
  });

  it('refuses a file that is not PEM', async () => {
    const junk = join(files.dir, 'junk.pem');
    await writeFile(junk, 'hello');
    await expect(readTlsCredentials(config({ keyFile: junk }))).rejects.toMatchObject({
      message: `HTTPS: tls.defaults.key_file ${junk}: not a PEM file`,
    });
  });

  it('refuses a key that does not match the certificate, naming both files', async () => {
    const err = await readTlsCredentials(config({ keyFile: files.clientKeyFile })).catch((e: Error) => e);
    expect(err).toMatchObject({ code: 'TLS_FILES_INVALID', kind: 'invalid' });
    expect((err as Error).message).toContain(`${files.certFile} with ${files.clientKeyFile}`);
    expect((err as Error).message).toMatch(/: the private key does not match the certificate$/);
  });
});
