// The messages between the main thread and the leaf-signing workers, declared once. Results and
// errors cross as data: a thrown error loses its code in structured cloning.
import type { ErrorCode } from '../../core/errors.js';
import type { SigningPriority } from './signing-priority.js';

/** A CA as a worker needs it. Sent only to a worker that answered `CA_UNKNOWN` for its ID. */
export interface CaMaterial {
  /** The root's ID; a worker caches the prepared CA under it. */
  readonly id: string;
  readonly privateKeyPem: string;
  readonly rootCertPem: string;
}

/** One leaf: generate a P-256 key and sign a certificate for it as the CA. */
export interface LeafTask {
  readonly caId: string;
  /** The CA itself, only when the worker may not hold it yet (first use of a root, CA_UNKNOWN). */
  readonly ca: CaMaterial | undefined;
  readonly serial: bigint;
  readonly uri: string;
  readonly nowMs: number;
  readonly ttlMs: number;
  readonly trustDomain: string;
  readonly datacenter: string;
  /** The leaf's public key (SPKI DER) when its owner generated the pair (a client agent); else the worker generates one. */
  readonly spki?: Uint8Array | undefined;
}

export type LeafResult =
  | {
      readonly ok: true;
      readonly certPem: string;
      /** Empty when the task brought its own public key. */
      readonly privateKeyPem: string;
      readonly notBefore: number;
      readonly notAfter: number;
    }
  | { readonly ok: false; readonly code: ErrorCode; readonly message: string };

/** The worker does not hold the task's CA yet: resend the task with `ca` set. */
export const CA_UNKNOWN = 'CA_UNKNOWN';

/**
 * The named export piscina calls in the worker file: a batch of leaves in, one result per leaf out,
 * in order. Batches keep the main thread's cost per leaf low (one message each way per batch).
 */
export const SIGN_LEAVES = 'signLeaves';

/**
 * Leaves per pool task at most. piscina's bookkeeping costs the main thread per task, not per
 * leaf: in a wave of 1,000 first leaves (bench/sizing/ca-wave-cpu.ts) a leaf's main-thread cost was
 * ~88 µs at 8 a batch, ~65 µs at 16, and no lower at 32. 16 results reaching the event loop
 * together cost it about a millisecond.
 */
export const MAX_BATCH = 16;

/** How signing threads give way to the event loop (see signing-priority.ts). */
export type { SigningPriority, SigningThreadReport } from './signing-priority.js';

/** The pool's workerData. */
export interface SignerWorkerData {
  readonly priority: SigningPriority;
}

/** A leaf key pair made for a client agent, whose public key a server signs (remote-signer.ts). */
export interface GeneratedKey {
  /** SubjectPublicKeyInfo DER. */
  readonly spki: Uint8Array;
  /** SEC1 `EC PRIVATE KEY` PEM, as issued leaves carry. */
  readonly privateKeyPem: string;
}

/** The named export that makes `count` leaf key pairs (a client agent's leaves: no CA involved). */
export const GENERATE_KEYS = 'generateKeys';

/** The named export that reports how a worker runs, as a SigningThreadReport. */
export const SCHEDULING_POLICY = 'schedulingPolicy';
