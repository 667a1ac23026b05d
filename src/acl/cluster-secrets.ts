// Token secrets in a cluster (secrets.ts, docs/decisions.md D23): a server agent keeps them in etcd's
// private range, which client agents cannot read; a client agent records and shows them through a
// server, over a request mailbox in etcd as leaf signing does (docs/cluster-security.md). Requests
// are unreadable by other client agents (etcd RBAC); replies are readable by all, so a reply that
// carries secrets is sealed to a key only its asker holds (sealed.ts).
import { z } from 'zod';
import { agentError, isAgentError } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import {
  ask,
  failedAnswer,
  failedAnswerSchema,
  MAILBOX_DEADLINES_MS,
  VIEW_CATCH_UP_MS,
  type FailedAnswer,
  type Mailbox,
  type NoAnswer,
} from '../core/mailbox.js';
import type { StateStore } from '../state/types.js';
import { permissionDenied } from './errors.js';
import type { Identity } from './identity.js';
import { ACL_TOKENS, type StoredToken } from './model.js';
import { replyKey, seal, type Sealed } from './sealed.js';
import { secretHash, tokenSecretHash, type TokenSecrets } from './secrets.js';

/** etcd's private range as a server holds it (src/state/etcd/ implements it; src/cluster/ wires it). */
export interface SecretRange {
  get<V>(path: string): Promise<V | undefined>;
  create(path: string, value: unknown): Promise<boolean>;
}

type SecretRequest =
  | { readonly Kind: 'keep'; readonly AccessorID: string; readonly SecretID: string; readonly Index: number }
  | {
      readonly Kind: 'reveal';
      readonly Token: string;
      readonly AccessorIDs: readonly string[];
      readonly ReplyKey: string;
    };

type SecretResponse = { readonly ok: true; readonly Sealed?: Sealed } | FailedAnswer;

const b64 = z.string().max(1 << 20);
const secretResponseSchema = z.discriminatedUnion('ok', [
  z.object({
    ok: z.literal(true),
    Sealed: z.object({ Key: b64, IV: b64, Data: b64, Tag: b64 }).optional(),
  }),
  failedAnswerSchema,
]);

/** A client's ways of getting no answer: each is the ACL system's "no server" (Consul's "ACL not found" aside). */
const NO_SECRET_ANSWER: NoAnswer = {
  unsent: (err) =>
    agentError('ACL_NO_SERVER', { detail: err instanceof Error ? err.message : String(err), cause: err }),
  unanswered: (deadlineMs) => agentError('ACL_NO_SERVER', { detail: `no answer within ${deadlineMs} ms` }),
  malformed: (problem) => agentError('ACL_NO_SERVER', { detail: `malformed answer: ${problem}` }),
};

const secretPath = (accessor: string): string => `acl/secrets/${accessor}`;

/** A server agent's: the secrets in the private range, read and written directly. */
export function serverSecrets(range: SecretRange): TokenSecrets {
  return {
    inRow: false,
    async keep(accessor, secret) {
      // A token's secret never changes: the first record stands.
      await range.create(secretPath(accessor), { SecretID: secret });
    },
    async reveal(accessors) {
      const found = await Promise.all(accessors.map((a) => range.get<{ SecretID?: unknown }>(secretPath(a))));
      const out = new Map<string, string>();
      accessors.forEach((accessor, i) => {
        const secret = found[i]?.SecretID;
        if (typeof secret === 'string') out.set(accessor, secret);
      });
      return out;
    },
  };
}

/** A client agent's: every secret goes to and comes from a server over the mailbox. */
export function clientSecrets(mailbox: Mailbox, deadlineMs = MAILBOX_DEADLINES_MS.acl): TokenSecrets {
  const request = (body: SecretRequest) => ask(mailbox, body, deadlineMs, secretResponseSchema, NO_SECRET_ANSWER);
  return {
    inRow: false,
    async keep(accessor, secret, index) {
      await request({ Kind: 'keep', AccessorID: accessor, SecretID: secret, Index: index });
    },
    async reveal(accessors, callerSecret) {
      const key = replyKey();
      const res = await request({
        Kind: 'reveal',
        Token: callerSecret,
        AccessorIDs: accessors,
        ReplyKey: key.publicKey,
      });
      if (res.Sealed === undefined) throw agentError('ACL_NO_SERVER', { detail: 'the answer carried no secrets' });
      const secrets = key.open(res.Sealed) as Record<string, unknown>;
      const out = new Map<string, string>();
      for (const [accessor, secret] of Object.entries(secrets))
        if (typeof secret === 'string') out.set(accessor, secret);
      return out;
    },
  };
}

export interface SecretRequestDeps {
  /** The server's own custody (serverSecrets). */
  readonly secrets: TokenSecrets;
  /** The server's view: a secret is recorded only if its hash is the one the token's row holds. */
  readonly store: StateStore;
  /** The server's token resolver: a caller is checked again here, never trusted from the client. */
  readonly resolve: (secret: string) => Identity;
  readonly log: Logger;
}

/**
 * Makes a server answer client agents' secret requests. Recording needs no token: the secret must
 * hash to the row's SecretHash, which only its holder can do. Showing needs acl:write.
 */
export function serveSecretRequests(mailbox: Mailbox, deps: SecretRequestDeps): void {
  mailbox.serve(async (body): Promise<SecretResponse> => {
    try {
      const req = body as Partial<Record<string, unknown>>;
      if (
        req.Kind === 'keep' &&
        typeof req.AccessorID === 'string' &&
        typeof req.SecretID === 'string' &&
        typeof req.Index === 'number'
      ) {
        await rowReached(deps.store, req.AccessorID, req.Index);
        const row = deps.store.get<StoredToken>(ACL_TOKENS, req.AccessorID);
        if (row === undefined || tokenSecretHash(row.value) !== secretHash(req.SecretID)) {
          throw agentError('ACL_SECRET_MISMATCH');
        }
        await deps.secrets.keep(req.AccessorID, req.SecretID, req.Index);
        return { ok: true };
      }
      if (
        req.Kind === 'reveal' &&
        typeof req.Token === 'string' &&
        Array.isArray(req.AccessorIDs) &&
        typeof req.ReplyKey === 'string'
      ) {
        const identity = deps.resolve(req.Token);
        if (!identity.authorizer.allowed('acl', 'write')) throw permissionDenied(identity, 'acl', 'write');
        const accessors = req.AccessorIDs.filter((a): a is string => typeof a === 'string');
        const secrets = await deps.secrets.reveal(accessors, req.Token);
        return { ok: true, Sealed: seal(Object.fromEntries(secrets), req.ReplyKey) };
      }
      throw agentError('ACL_NO_SERVER', { detail: 'malformed secret request' });
    } catch (err) {
      if (!isAgentError(err)) deps.log.warn({ err }, 'answering a token secret request failed');
      return failedAnswer(err, (detail) => agentError('ACL_NO_SERVER', { detail }));
    }
  });
}

/** Resolves once the server's view holds the token row at `index` or later, or after VIEW_CATCH_UP_MS. */
function rowReached(store: StateStore, accessor: string, index: number): Promise<void> {
  if (store.keyIndex(ACL_TOKENS, accessor) >= index) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, VIEW_CATCH_UP_MS);
    timer.unref();
    let cancel = store.watchOnce({ table: ACL_TOKENS, key: accessor }, check);
    function check(): void {
      if (store.keyIndex(ACL_TOKENS, accessor) >= index) done();
      else cancel = store.watchOnce({ table: ACL_TOKENS, key: accessor }, check);
    }
    function done(): void {
      clearTimeout(timer);
      cancel();
      resolve();
    }
  });
}
