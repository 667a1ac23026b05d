// The messages between the main thread and the leaf-signing workers, declared once. Results and
// errors cross as data: a thrown error loses its code in structured cloning.
import type { SigningPriority } from '../src/connect/ca/signing-priority.js';

/** A CA as a worker needs it. Sent only to a worker that answered `CA_UNKNOWN` for its ID. */
export interface CaMaterial {
  /** The root's ID; a worker caches the prepared CA under it. */
  readonly id: string;
  readonly privateKeyPem: string;
  readonly rootCertPem: string;
}

/** One leaf: generate a P-256 key, build its CSR, check the CSR and sign it as the CA. */
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
}

export type LeafResult =
  | {
      readonly ok: true;
      readonly certPem: string;
      readonly privateKeyPem: string;
      readonly notBefore: number;
      readonly notAfter: number;
    }
  | { readonly ok: false; readonly code: string; readonly message: string };

/** The worker does not hold the task's CA yet: resend the task with `ca` set. */
export const CA_UNKNOWN = 'CA_UNKNOWN';

/**
 * The named export piscina calls in the worker file: a batch of leaves in, one result per leaf out,
 * in order. Batches keep the main thread's cost per leaf low (one message each way per batch).
 */
export const SIGN_LEAVES = 'signLeaves';

/** How signing threads give way to the event loop (see src/connect/ca/signing-priority.ts). */
export type { SigningPriority, SigningThreadReport } from '../src/connect/ca/signing-priority.js';

/** The pool's workerData. */
export interface SignerWorkerData {
  readonly priority: SigningPriority;
}

/** The named export that reports how a worker runs, as a SigningThreadReport. */
export const SCHEDULING_POLICY = 'schedulingPolicy';
