// Leaf signing for client agents, which hold no CA key: the client generates the leaf's key pair
// and asks a server, through the mailbox at the root of `sign/` (src/core/mailbox.ts, over etcd),
// to sign its public key; a server answers with the certificate. The private key never leaves the client and
// the CA key never leaves the servers. The server builds the SPIFFE ID itself from its own trust
// domain and datacenter, so a request names only a service, and it signs only for a request whose
// caller's token holds service:write on that service, checked on the server (docs/decisions.md D24).
import { z } from 'zod';
import { agentError, isAgentError } from '../../core/errors.js';
import type { Logger } from '../../core/log.js';
import {
  ask,
  failedAnswer,
  failedAnswerSchema,
  MAILBOX_DEADLINES_MS,
  problemOf,
  VIEW_CATCH_UP_MS,
  type FailedAnswer,
  type Mailbox,
  type NoAnswer,
} from '../../core/mailbox.js';
import type { IssuedLeaf } from './authority.js';
import type { LeafSource } from './leaf-manager.js';
import { pemBlocks } from './encoding.js';
import { p256PublicKey } from './p256.js';
import { parseCertificate } from './x509.js';
import type { KeyGenerator } from './signer.js';
import { parseServiceUri, serviceUri } from './spiffe-id.js';

/** What a client agent writes. */
export interface SigningRequest {
  readonly Namespace: string;
  readonly Service: string;
  /** The leaf's public key: SPKI DER, base64. */
  readonly PublicKey: string;
  readonly Datacenter: string;
  /** The requesting agent's node name (for the server's log). */
  readonly Node: string;
  /** The roots index the client's view holds: a server whose view is behind waits for it before signing. */
  readonly RootsIndex?: number;
  /**
   * The token of the caller the leaf is for; the server checks service:write with it. Requests are
   * unreadable by other client agents (docs/cluster-security.md), so it leaks to none. Absent: anonymous.
   */
  readonly Token?: string;
}

/** What a server answers. */
export type SigningResponse =
  | {
      readonly ok: true;
      readonly CertPEM: string;
      /** Decimal digits (a uint64 may exceed 2^53). */
      readonly Serial: string;
      readonly SerialNumber: string;
      readonly URI: string;
      readonly ValidAfter: number;
      readonly ValidBefore: number;
      readonly Index: number;
      readonly SigningKeyID: string;
    }
  | FailedAnswer;

// What each side reads from etcd is checked before it is used: any agent can write on the channel.
const signingRequestSchema = z.object({
  Namespace: z.string(),
  Service: z.string(),
  PublicKey: z.base64(),
  Datacenter: z.string(),
  Node: z.string(),
  RootsIndex: z.number().exactOptional(),
  Token: z.string().exactOptional(),
}) satisfies z.ZodType<SigningRequest>;

const signingResponseSchema = z.discriminatedUnion('ok', [
  z.object({
    ok: z.literal(true),
    CertPEM: z.string(),
    Serial: z.string().regex(/^\d{1,20}$/),
    SerialNumber: z.string(),
    URI: z.string(),
    ValidAfter: z.number(),
    ValidBefore: z.number(),
    Index: z.number(),
    SigningKeyID: z.string(),
  }),
  failedAnswerSchema,
]) satisfies z.ZodType<SigningResponse>;

/** A client's ways of getting no signing answer. */
const NO_SIGNING_ANSWER: NoAnswer = {
  unsent: (err) =>
    // etcd's spent quota is said as itself (each agent logs the alarm once), not as a missing server.
    isAgentError(err) && (err.code === 'CA_SIGN_FAILED' || err.code === 'STATE_ETCD_NO_SPACE')
      ? err
      : agentError('CA_NO_SERVER', { detail: err instanceof Error ? err.message : String(err), cause: err }),
  unanswered: (deadlineMs) => agentError('CA_NO_SERVER', { detail: `no answer within ${deadlineMs} ms` }),
  malformed: (problem) => agentError('CA_SIGN_FAILED', { detail: `malformed signing answer: ${problem}` }),
};

export interface RemoteLeafSourceOptions {
  readonly channel: Mailbox;
  readonly datacenter: string;
  readonly node: string;
  readonly deadlineMs?: number | undefined;
  /** Makes the leaf key pairs: the agent's signing pool (PoolSigner), off the event loop. */
  readonly keys: KeyGenerator;
  /** The roots index of the client's view, sent so that a leaf asked for after a rotation is signed by the new root. */
  readonly rootsIndex?: (() => number) | undefined;
  /**
   * Whether the member list holds a live server agent. With none, a request fails at once, as a
   * Consul client agent with no known server does, rather than at the deadline.
   */
  readonly serverKnown?: (() => boolean) | undefined;
}

/** A client agent's LeafSource: the LeafManager's cache, renewal and blocking stay as they are. */
export class RemoteLeafSource implements LeafSource {
  constructor(private readonly o: RemoteLeafSourceOptions) {}

  async signLeaf(namespace: string, service: string, token?: string): Promise<IssuedLeaf> {
    if (this.o.serverKnown?.() === false) {
      throw agentError('CA_NO_SERVER', { detail: 'no server agent is a member of the cluster' });
    }
    const key = await this.o.keys.generateKey();
    const request: SigningRequest = {
      Namespace: namespace,
      Service: service,
      PublicKey: Buffer.from(key.spki).toString('base64'),
      Datacenter: this.o.datacenter,
      Node: this.o.node,
      ...(this.o.rootsIndex === undefined ? {} : { RootsIndex: this.o.rootsIndex() }),
      ...(token === undefined ? {} : { Token: token }),
    };
    const deadline = this.o.deadlineMs ?? MAILBOX_DEADLINES_MS.sign;
    const res = await ask(this.o.channel, request, deadline, signingResponseSchema, NO_SIGNING_ANSWER);
    checkAnswer(res, key.spki, service);
    return {
      serial: BigInt(res.Serial),
      serialNumber: res.SerialNumber,
      certPem: res.CertPEM,
      privateKeyPem: key.privateKeyPem,
      uri: res.URI,
      validAfter: res.ValidAfter,
      validBefore: res.ValidBefore,
      index: res.Index,
      signingKeyId: res.SigningKeyID,
    };
  }
}

/** What answering a signing request takes of a server CA (server-ca.ts). */
export interface SigningAuthority {
  /** The trust domain its leaves' URIs are built in (signPublicKey builds them as serviceUri does). */
  readonly trustDomain: string;
  rootsReached(index: number, withinMs: number): Promise<void>;
  signPublicKey(namespace: string, service: string, spki: Uint8Array): Promise<IssuedLeaf>;
}

/**
 * The server's check of a request's caller, as Consul's ConnectCA.Sign makes it: throws (an
 * AgentError, answered to the client) unless `token` (undefined: anonymous) may write `service`.
 */
export type LeafAuthorizer = (token: string | undefined, namespace: string, service: string) => void;

export interface ServeSigningOptions {
  readonly datacenter: string;
  readonly log: Logger;
  /** Required: a server signs nothing its caller's token does not cover. */
  readonly authorize: LeafAuthorizer;
}

/** Makes a server agent answer client agents' signing requests with its CA. */
export function serveSigningRequests(channel: Mailbox, ca: SigningAuthority, options: ServeSigningOptions): void {
  channel.serve(async (body): Promise<SigningResponse> => {
    try {
      const checked = signingRequestSchema.safeParse(body);
      if (!checked.success)
        throw agentError('CA_BAD_CSR', { detail: `malformed signing request: ${problemOf(checked.error)}` });
      const req = checked.data;
      // Before anything is signed or a serial taken: the caller's right to the service.
      options.authorize(req.Token, req.Namespace, req.Service);
      if (req.Datacenter !== options.datacenter) {
        throw agentError('CA_BAD_CSR', {
          detail: `SPIFFE ID in CSR from a different datacenter: ${String(req.Datacenter)}, we are ${options.datacenter}`,
        });
      }
      const spki = Buffer.from(req.PublicKey, 'base64');
      // Leaves carry P-256 keys (docs/decisions.md D14): anything else is refused, not signed.
      if (!isP256(spki)) throw agentError('CA_BAD_CSR', { detail: 'the public key is not a P-256 key' });
      // The URI it will sign must name the service asked for as the client reads it back (checkAnswer):
      // a name that does not survive its URI is refused here, before a serial is taken.
      const uri = serviceUri({
        trustDomain: ca.trustDomain,
        namespace: req.Namespace,
        datacenter: options.datacenter,
        service: req.Service,
      });
      if (!namesService(uri, req.Service)) {
        throw agentError('CA_BAD_CSR', {
          detail: `the SPIFFE ID ${uri} does not name service ${JSON.stringify(req.Service)}`,
        });
      }
      // The client's view may hold a rotation this server's view has not applied yet: sign with the new root.
      if (typeof req.RootsIndex === 'number') await ca.rootsReached(req.RootsIndex, VIEW_CATCH_UP_MS);
      const leaf = await ca.signPublicKey(req.Namespace, req.Service, spki);
      options.log.debug(
        { node: req.Node, uri: leaf.uri, serial: leaf.serialNumber },
        'signed a leaf for a client agent',
      );
      return {
        ok: true,
        CertPEM: leaf.certPem,
        Serial: leaf.serial.toString(),
        SerialNumber: leaf.serialNumber,
        URI: leaf.uri,
        ValidAfter: leaf.validAfter,
        ValidBefore: leaf.validBefore,
        Index: leaf.index,
        SigningKeyID: leaf.signingKeyId,
      };
    } catch (err) {
      return failedAnswer(err, (detail) => agentError('CA_SIGN_FAILED', { detail }));
    }
  });
}

/**
 * Another client agent can write on the signing mailbox too (docs/cluster-security.md): an answer
 * is taken only if it certifies this request's own key for this service.
 */
function checkAnswer(res: SigningResponse & { ok: true }, spki: Uint8Array, service: string): void {
  const der = pemBlocks(res.CertPEM, 'CERTIFICATE')[0];
  const cert = der === undefined ? undefined : parseCertificate(der);
  if (cert === undefined || !cert.spki.equals(Buffer.from(spki))) {
    throw agentError('CA_SIGN_FAILED', { detail: 'the signing answer does not certify the requested key' });
  }
  if (!cert.uris.includes(res.URI) || !namesService(res.URI, service)) {
    throw agentError('CA_SIGN_FAILED', { detail: `the signing answer names ${res.URI}, not service ${service}` });
  }
}

/**
 * Whether `uri` is a service SPIFFE ID for `service`: its service segment, decoded, is the name as
 * asked. A URI holds a name percent-encoded (`a b` is `a%20b`, spiffe.ts); names are compared
 * decoded, the one form both ends share, on the server before it signs and on the client after.
 */
export function namesService(uri: string, service: string): boolean {
  return parseServiceUri(uri)?.service === service;
}

function isP256(spki: Buffer): boolean {
  try {
    return p256PublicKey(spki) !== undefined;
  } catch {
    return false; // off the curve
  }
}
