// The agent's own ACL tokens, kept as Consul's agent token store keeps them (docs/decisions.md D21,
// docs/decisions.md#agent-token-kinds): the config sets them at start-up and again on every reload,
// and PUT /v1/agent/token/<kind> replaces one until then, or for good with token persistence. The
// default token is a request's that carries none; the agent token is what a client agent's
// anti-entropy carries to the servers (docs/decisions.md D26); the agent recovery token is resolved
// here, never by the servers; the config-file registration token carries a client agent's sync of
// the services its config files define; the replication token is kept and feeds nothing.
import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../core/log.js';
import { PRIVATE_FILE_MODE } from '../core/private-files.js';
import { compileAuthorizer } from './authorizer.js';
import type { Identity } from './identity.js';

export type AgentTokenKind =
  'default' | 'agent' | 'agent_recovery' | 'replication' | 'config_file_service_registration';

/** The kinds in Consul's order, which is also the key order of the persisted file. */
export const AGENT_TOKEN_KINDS: readonly AgentTokenKind[] = [
  'default',
  'agent',
  'agent_recovery',
  'replication',
  'config_file_service_registration',
];

/** acl.tokens.* (the config's camelCase names). */
export interface AgentTokenConfig {
  readonly default?: string | undefined;
  readonly agent?: string | undefined;
  readonly agentRecovery?: string | undefined;
  readonly replication?: string | undefined;
  readonly configFileServiceRegistration?: string | undefined;
}

/** Where the tokens set through the API are kept across restarts (acl.enable_token_persistence). */
export interface AgentTokenFile {
  /** The tokens the file holds (none when there is no file). */
  read(): Partial<Record<AgentTokenKind, string>>;
  /** Replaces the file's contents; resolves once they are on disk. */
  write(tokens: Partial<Record<AgentTokenKind, string>>): Promise<void>;
}

/** Who the agent recovery token acts as, on this node (Consul's agentRecoveryAuthorizer). */
export interface RecoveryScope {
  readonly nodeName: string;
  readonly datacenter: string;
}

type Tokens = Record<AgentTokenKind, string>;

function fromConfig(config: AgentTokenConfig): Tokens {
  return {
    default: config.default ?? '',
    agent: config.agent ?? '',
    agent_recovery: config.agentRecovery ?? '',
    replication: config.replication ?? '',
    config_file_service_registration: config.configFileServiceRegistration ?? '',
  };
}

export class AgentTokens {
  private tokens: Tokens;
  /** Set through the API and not cleared since: with a file, these outlive a reload and a restart. */
  private fromApi: Partial<Tokens>;
  private writing: Promise<void> = Promise.resolve();
  private recovery: Identity | undefined;

  constructor(
    config: AgentTokenConfig,
    private readonly file?: AgentTokenFile,
    private readonly log?: Logger,
  ) {
    this.fromApi = file?.read() ?? {};
    this.tokens = this.merged(config);
  }

  /**
   * At start-up and on each reload: the config's values replace any set through the API, except
   * those the token file keeps (Consul: "using the persisted token").
   */
  load(config: AgentTokenConfig): void {
    if (this.file === undefined) this.fromApi = {};
    this.tokens = this.merged(config);
  }

  /** An empty token clears it, as in Consul; resolves once a token file holds the change. */
  set(kind: AgentTokenKind, token: string): Promise<void> {
    this.tokens = { ...this.tokens, [kind]: token };
    this.fromApi = { ...this.fromApi, [kind]: token };
    if (this.file === undefined) return Promise.resolve();
    const file = this.file;
    // Consul keeps only non-empty tokens that came through the API.
    const kept = Object.fromEntries(AGENT_TOKEN_KINDS.flatMap((k) => (this.fromApi[k] ? [[k, this.fromApi[k]]] : [])));
    // One write at a time, in order: the last set is the file's last word.
    const run = this.writing.then(() => file.write(kept));
    this.writing = run.catch(() => undefined);
    return run;
  }

  /** The token a request that carries none acts with; undefined means the anonymous token. */
  defaultToken(): string | undefined {
    return this.tokens.default || undefined;
  }

  /** The token of the agent's own calls (a client's anti-entropy): the agent token, else the default. */
  agentToken(): string | undefined {
    return this.tokens.agent || this.defaultToken();
  }

  /**
   * The token a client agent's sync of one service carries: a service its config files define
   * carries the config-file registration token when one is set, as Consul's does; else the agent token.
   */
  serviceSyncToken(definedInConfig: boolean): string | undefined {
    if (definedInConfig && this.tokens.config_file_service_registration !== '')
      return this.tokens.config_file_service_registration;
    return this.agentToken();
  }

  /** The replication token (kept and reported; one datacenter has nothing to replicate). */
  replicationToken(): string | undefined {
    return this.tokens.replication || undefined;
  }

  /**
   * The identity of the agent recovery token when `secret` is it: `agent "<node>"` write and
   * `node_prefix ""` read, nothing else, resolved by the agent itself whatever the servers' state.
   */
  recoveryIdentity(secret: string, scope: RecoveryScope): Identity | undefined {
    const recovery = this.tokens.agent_recovery;
    if (recovery === '' || secret !== recovery) return undefined;
    if (this.recovery?.secret !== secret) this.recovery = recoveryIdentityOf(secret, scope);
    return this.recovery;
  }

  private merged(config: AgentTokenConfig): Tokens {
    const tokens = fromConfig(config);
    for (const kind of AGENT_TOKEN_KINDS) {
      const kept = this.fromApi[kind];
      if (kept === undefined || kept === '') continue;
      if (this.file !== undefined && tokens[kind] !== '')
        this.log?.warn(
          { kind },
          `"${kind}" token present in both the configuration and persisted token store, using the persisted token`,
        );
      tokens[kind] = kept;
    }
    return tokens;
  }
}

function recoveryIdentityOf(secret: string, { nodeName, datacenter }: RecoveryScope): Identity {
  const authorizer = compileAuthorizer({
    policies: [{ agent: [{ name: nodeName, policy: 'write' }], node_prefix: [{ name: '', policy: 'read' }] }],
    datacenter,
    defaultPolicy: 'deny',
  });
  return Object.freeze({
    authorizer,
    accessorId: `agent-recovery:${nodeName}`,
    anonymous: false,
    namespace: 'default',
    secret,
  });
}

/** Consul's file name under data_dir. */
export const AGENT_TOKENS_FILE = 'acl-tokens.json';

/**
 * The token file under data_dir, read once here: a missing file holds no tokens; an unreadable or
 * damaged one is warned of and the config's tokens are used, as Consul does. Written 0600 through a
 * temporary file renamed into place.
 */
export async function openAgentTokenFile(dataDir: string, log: Logger): Promise<AgentTokenFile> {
  const path = join(dataDir, AGENT_TOKENS_FILE);
  let held: Partial<Record<AgentTokenKind, string>> = {};
  try {
    held = parseTokenFile(await readFile(path, 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') log.warn({ err, path }, 'unable to load persisted tokens');
  }
  return {
    read: () => held,
    write: async (tokens) => {
      const temp = `${path}.tmp`;
      try {
        await writeFile(temp, JSON.stringify(tokens), { mode: PRIVATE_FILE_MODE });
        await rename(temp, path);
      } catch (err) {
        log.warn({ err, path }, 'failed to persist tokens');
        throw err;
      }
    },
  };
}

/** The file's tokens; `agent_master` is read as agent_recovery (files of Consul before 1.11). */
export function parseTokenFile(text: string): Partial<Record<AgentTokenKind, string>> {
  const parsed: unknown = JSON.parse(text);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not a token file');
  const raw = parsed as Record<string, unknown>;
  const out: Partial<Record<AgentTokenKind, string>> = {};
  for (const kind of AGENT_TOKEN_KINDS) {
    const value = raw[kind] ?? (kind === 'agent_recovery' ? raw.agent_master : undefined);
    if (typeof value === 'string' && value !== '') out[kind] = value;
  }
  return out;
}
