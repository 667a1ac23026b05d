// One thread's leaf issuance: the CAs it has prepared (parsed key, issuer name, key ID and
// signature algorithm, once per root) and the task itself: a key pair (unless the task brings its
// public key) and the certificate for it.
// Runs inside a pool worker, or in-process for tests. Every failure returns as data.
import { createPrivateKey } from 'node:crypto';
import { CA_UNKNOWN, type CaMaterial, type GeneratedKey, type LeafResult, type LeafTask } from './signing-protocol.js';
import { isAgentError } from '../../core/errors.js';
import { pemBlocks, toPem } from './encoding.js';
import { createIssuer, generateLeafKey, leafKeyPem, signLeaf, type Issuer } from './x509.js';

/** A rotation keeps at most the old and the new root busy; a few more cover quick re-rotations. */
const MAX_PREPARED_CAS = 4;

/** A client agent's leaf key pair (its public key goes to a server to be signed). */
export function generateKeyMaterial(): GeneratedKey {
  const key = generateLeafKey();
  return { spki: key.spki, privateKeyPem: leafKeyPem(key) };
}

export class LeafWork {
  private readonly issuers = new Map<string, Issuer>();

  run(task: LeafTask): LeafResult {
    try {
      if (task.ca !== undefined) this.prepare(task.ca);
      const issuer = this.issuers.get(task.caId);
      if (issuer === undefined)
        return { ok: false, code: CA_UNKNOWN, message: `CA ${task.caId} is not prepared in this worker` };
      const key = task.spki === undefined ? generateLeafKey() : undefined;
      const leaf = signLeaf(issuer, {
        spki: key?.spki ?? Buffer.from(task.spki as Uint8Array),
        uri: task.uri,
        serial: task.serial,
        nowMs: task.nowMs,
        ttlMs: task.ttlMs,
        trustDomain: task.trustDomain,
        datacenter: task.datacenter,
      });
      return {
        ok: true,
        certPem: toPem(leaf.der, 'CERTIFICATE'),
        privateKeyPem: key === undefined ? '' : leafKeyPem(key),
        notBefore: leaf.notBefore,
        notAfter: leaf.notAfter,
      };
    } catch (err) {
      if (isAgentError(err)) return { ok: false, code: err.code, message: err.message };
      return { ok: false, code: 'CA_SIGN_FAILED', message: err instanceof Error ? err.message : String(err) };
    }
  }

  private prepare(ca: CaMaterial): void {
    if (this.issuers.has(ca.id)) return;
    const cert = pemBlocks(ca.rootCertPem, 'CERTIFICATE')[0];
    if (cert === undefined) throw new Error('CA material has no certificate');
    this.issuers.set(ca.id, createIssuer(createPrivateKey(ca.privateKeyPem), cert));
    while (this.issuers.size > MAX_PREPARED_CAS) this.issuers.delete(this.issuers.keys().next().value as string);
  }
}
