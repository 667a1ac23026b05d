// The signer the CA manager needs (declared by its consumer), the mapping of a worker's result
// to an AgentError, and an in-process implementation for tests and single-threaded use.
import { CA_UNKNOWN, type CaMaterial, type GeneratedKey, type LeafResult, type LeafTask } from './signing-protocol.js';
import { AgentError, agentError } from '../../core/errors.js';
import { generateKeyMaterial, LeafWork } from './leaf-work.js';

/** A leaf to sign: the worker protocol's task, with the CA material always at hand. */
export type SignTask = Omit<LeafTask, 'caId' | 'ca' | 'spki'> & {
  readonly ca: CaMaterial;
  readonly spki?: Uint8Array | undefined;
};

export interface SignedMaterial {
  readonly certPem: string;
  readonly privateKeyPem: string;
  readonly notBefore: number;
  readonly notAfter: number;
}

/** Makes leaf key pairs for a client agent (remote-signer.ts); the pool does it off the event loop. */
export interface KeyGenerator {
  generateKey(): Promise<GeneratedKey>;
}

export interface CertSigner {
  /** Generates a key and signs a certificate for it; rejects with an AgentError. */
  sign(task: SignTask): Promise<SignedMaterial>;
  close(): Promise<void>;
}

/**
 * The task as sent to a worker: the CA by ID, with its material only when asked for. Fields are
 * written out (no rest/spread) so every task has one hidden class and clones along one path.
 */
export function leafTask(task: SignTask, withCa: boolean): LeafTask {
  const { ca, serial, uri, nowMs, ttlMs, trustDomain, datacenter, spki } = task;
  return { caId: ca.id, ca: withCa ? ca : undefined, serial, uri, nowMs, ttlMs, trustDomain, datacenter, spki };
}

/** Rebuilds a worker's failure as the AgentError it was (codes survive; classes do not). */
export function resultToMaterial(result: LeafResult): SignedMaterial {
  if (result.ok)
    return {
      certPem: result.certPem,
      privateKeyPem: result.privateKeyPem,
      notBefore: result.notBefore,
      notAfter: result.notAfter,
    };
  // Only the request's own fault (a URI the CA refuses) is the caller's; anything else a signing
  // thread reports is a fault of ours, whatever its code would mean on the main thread.
  if (result.code === 'CA_BAD_CSR') throw new AgentError(result.code, result.message);
  throw agentError('CA_SIGN_FAILED', { detail: `${result.code}: ${result.message}` });
}

/** Signs on the calling thread; same code path as a worker, minus the thread. */
export class LocalSigner implements CertSigner, KeyGenerator {
  private readonly work = new LeafWork();
  /** Tasks signed so far (tests count issuances with it). */
  signed = 0;

  sign(task: SignTask): Promise<SignedMaterial> {
    try {
      let result = this.work.run(leafTask(task, false));
      if (!result.ok && result.code === CA_UNKNOWN) result = this.work.run(leafTask(task, true));
      const material = resultToMaterial(result);
      this.signed++;
      return Promise.resolve(material);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  generateKey(): Promise<GeneratedKey> {
    return Promise.resolve(generateKeyMaterial());
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
