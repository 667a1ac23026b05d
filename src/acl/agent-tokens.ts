// The agent's own ACL tokens, kept as Consul's agent token store keeps them without persistence
// (docs/decisions.md D21): the config sets them at start-up and again on every reload, and
// PUT /v1/agent/token/<kind> replaces one until then. The default token is a request's that carries
// none; the agent token is what a client agent's anti-entropy carries to the servers (docs/decisions.md D26).
export type AgentTokenKind = 'default' | 'agent';

/** acl.tokens.default and acl.tokens.agent. */
export interface AgentTokenConfig {
  readonly default?: string | undefined;
  readonly agent?: string | undefined;
}

export class AgentTokens {
  private tokens: Record<AgentTokenKind, string> = { default: '', agent: '' };

  constructor(config: AgentTokenConfig) {
    this.load(config);
  }

  /** At start-up and on each reload: the config's values replace any set through the API. */
  load(config: AgentTokenConfig): void {
    this.tokens = { default: config.default ?? '', agent: config.agent ?? '' };
  }

  /** An empty token clears it, as in Consul. */
  set(kind: AgentTokenKind, token: string): void {
    this.tokens = { ...this.tokens, [kind]: token };
  }

  /** The token a request that carries none acts with; undefined means the anonymous token. */
  defaultToken(): string | undefined {
    return this.tokens.default || undefined;
  }

  /** The token of the agent's own calls (a client's anti-entropy): the agent token, else the default. */
  agentToken(): string | undefined {
    return this.tokens.agent || this.defaultToken();
  }
}
