// The agent's own tokens: the config sets them, the API replaces one, a reload puts the config's
// back unless a token file keeps the API's; the recovery token resolves to agent:write on this node;
// a config-file service's sync carries the config-file registration token.
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  AGENT_TOKENS_FILE,
  AgentTokens,
  openAgentTokenFile,
  parseTokenFile,
  type AgentTokenFile,
  type AgentTokenKind,
} from '../../../src/acl/agent-tokens.js';
import { silentLogger, type Logger } from '../../../src/core/log.js';

const SCOPE = { nodeName: 'node-1', datacenter: 'dc1' };

/** A token file in memory: what it holds and every write made to it. */
function memoryFile(initial: Partial<Record<AgentTokenKind, string>> = {}) {
  let held = { ...initial };
  const writes: Partial<Record<AgentTokenKind, string>>[] = [];
  const file: AgentTokenFile = {
    read: () => held,
    write: (tokens) => {
      writes.push(tokens);
      held = { ...tokens };
      return Promise.resolve();
    },
  };
  return { file, writes, held: () => held };
}

function recordingLog(): { log: Logger; warnings: string[] } {
  const warnings: string[] = [];
  const log = { ...silentLogger, warn: (_: unknown, msg: string) => void warnings.push(msg) } as Logger;
  return { log, warnings };
}

describe('AgentTokens', () => {
  it("acts with the config's default token, and with none (anonymous) when it is empty", () => {
    expect(new AgentTokens({ default: 'cfg-default', agent: 'cfg-agent' }).defaultToken()).toBe('cfg-default');
    expect(new AgentTokens({}).defaultToken()).toBeUndefined();
    expect(new AgentTokens({ default: '' }).defaultToken()).toBeUndefined();
  });

  it('takes a default token set through the API, and an empty one clears it', async () => {
    const tokens = new AgentTokens({ default: 'cfg-default' });
    await tokens.set('default', 'api-default');
    expect(tokens.defaultToken()).toBe('api-default');
    await tokens.set('default', '');
    expect(tokens.defaultToken()).toBeUndefined();
  });

  it('keeps the agent token apart from the default token; the agent token falls back to the default', async () => {
    const tokens = new AgentTokens({ default: 'cfg-default' });
    expect(tokens.agentToken()).toBe('cfg-default');
    await tokens.set('agent', 'api-agent');
    expect(tokens.defaultToken()).toBe('cfg-default');
    expect(tokens.agentToken()).toBe('api-agent');
  });

  it("puts the config's tokens back on a reload, as Consul does without token persistence", async () => {
    const tokens = new AgentTokens({ default: 'cfg-default', replication: 'cfg-repl' });
    await tokens.set('default', 'api-default');
    await tokens.set('replication', 'api-repl');
    tokens.load({ default: 'cfg-default', replication: 'cfg-repl' });
    expect(tokens.defaultToken()).toBe('cfg-default');
    expect(tokens.replicationToken()).toBe('cfg-repl');
  });

  it('keeps the replication token, which nothing else reads', async () => {
    const tokens = new AgentTokens({ default: 'd' });
    expect(tokens.replicationToken()).toBeUndefined();
    await tokens.set('replication', 'repl');
    expect(tokens.replicationToken()).toBe('repl');
    expect([tokens.defaultToken(), tokens.agentToken()]).toEqual(['d', 'd']);
  });

  describe('the agent recovery token', () => {
    it('resolves to agent:write on this node and node:read, and nothing else', () => {
      const tokens = new AgentTokens({ agentRecovery: 'recover-me' });
      const identity = tokens.recoveryIdentity('recover-me', SCOPE);
      expect(identity).toMatchObject({ accessorId: 'agent-recovery:node-1', anonymous: false, namespace: 'default' });
      const allowed = identity!.authorizer.allowed.bind(identity!.authorizer);
      expect(allowed('agent', 'write', 'node-1')).toBe(true);
      expect(allowed('agent', 'read', 'node-1')).toBe(true);
      expect(allowed('agent', 'write', 'node-2')).toBe(false);
      expect(allowed('agent', 'read', 'node-2')).toBe(false);
      expect(allowed('node', 'read', 'any-node')).toBe(true);
      expect(allowed('node', 'write', 'node-1')).toBe(false);
      expect(allowed('key', 'read', 'k')).toBe(false);
      expect(allowed('service', 'read', 'web')).toBe(false);
      expect(allowed('acl', 'read')).toBe(false);
      expect(allowed('operator', 'read')).toBe(false);
    });

    it('is no identity for another secret, for an empty one, or while none is set', async () => {
      const tokens = new AgentTokens({});
      expect(tokens.recoveryIdentity('', SCOPE)).toBeUndefined();
      expect(tokens.recoveryIdentity('anything', SCOPE)).toBeUndefined();
      await tokens.set('agent_recovery', 'set-later');
      expect(tokens.recoveryIdentity('anything', SCOPE)).toBeUndefined();
      expect(tokens.recoveryIdentity('set-later', SCOPE)?.accessorId).toBe('agent-recovery:node-1');
      await tokens.set('agent_recovery', '');
      expect(tokens.recoveryIdentity('set-later', SCOPE)).toBeUndefined();
      expect(tokens.recoveryIdentity('', SCOPE)).toBeUndefined();
    });

    it('changes with the token: the old secret stops working at once', async () => {
      const tokens = new AgentTokens({ agentRecovery: 'old' });
      await tokens.set('agent_recovery', 'new');
      expect(tokens.recoveryIdentity('old', SCOPE)).toBeUndefined();
      expect(tokens.recoveryIdentity('new', SCOPE)?.secret).toBe('new');
    });
  });

  describe('the config-file registration token', () => {
    it("is what a config file's service syncs with once set; an API service keeps the agent token", async () => {
      const tokens = new AgentTokens({ agent: 'agent-tok' });
      expect(tokens.serviceSyncToken(true)).toBe('agent-tok');
      await tokens.set('config_file_service_registration', 'file-tok');
      expect(tokens.serviceSyncToken(true)).toBe('file-tok');
      expect(tokens.serviceSyncToken(false)).toBe('agent-tok');
      expect(new AgentTokens({ configFileServiceRegistration: 'cfg-file' }).serviceSyncToken(true)).toBe('cfg-file');
    });
  });

  describe('with a token file (acl.enable_token_persistence)', () => {
    it('writes every non-empty token set through the API, and only those', async () => {
      const { file, writes } = memoryFile();
      const tokens = new AgentTokens({ default: 'cfg-default', agent: 'cfg-agent' }, file);
      await tokens.set('agent', 'api-agent');
      await tokens.set('agent_recovery', 'api-recovery');
      await tokens.set('agent', '');
      expect(writes).toEqual([
        { agent: 'api-agent' },
        { agent: 'api-agent', agent_recovery: 'api-recovery' },
        { agent_recovery: 'api-recovery' },
      ]);
      // Cleared through the API: none until a reload or restart brings the config's back.
      expect(tokens.agentToken()).toBe('cfg-default');
      tokens.load({ default: 'cfg-default', agent: 'cfg-agent' });
      expect(tokens.agentToken()).toBe('cfg-agent');
    });

    it("starts from the file's tokens, which win over the config's, with Consul's warning", () => {
      const { file } = memoryFile({ default: 'kept-default', config_file_service_registration: 'kept-file' });
      const { log, warnings } = recordingLog();
      const tokens = new AgentTokens({ default: 'cfg-default', agent: 'cfg-agent' }, file, log);
      expect(tokens.defaultToken()).toBe('kept-default');
      expect(tokens.agentToken()).toBe('cfg-agent');
      expect(tokens.serviceSyncToken(true)).toBe('kept-file');
      expect(warnings).toEqual([
        '"default" token present in both the configuration and persisted token store, using the persisted token',
      ]);
    });

    it('keeps the API tokens over a reload', async () => {
      const { file } = memoryFile();
      const tokens = new AgentTokens({ default: 'cfg-default' }, file);
      await tokens.set('default', 'api-default');
      tokens.load({ default: 'cfg-default-2' });
      expect(tokens.defaultToken()).toBe('api-default');
    });

    it('writes in the order the tokens were set, and a failed write fails its set alone', async () => {
      let fail = true;
      const written: string[] = [];
      const file: AgentTokenFile = {
        read: () => ({}),
        write: (t) => {
          if (fail) {
            fail = false;
            return Promise.reject(new Error('disk full'));
          }
          written.push(t.default ?? '');
          return Promise.resolve();
        },
      };
      const tokens = new AgentTokens({}, file);
      const first = tokens.set('default', 'a');
      const second = tokens.set('default', 'b');
      await expect(first).rejects.toThrow('disk full');
      await second;
      expect(written).toEqual(['b']);
    });
  });
});

describe('the token file on disk', () => {
  let dir: string | undefined;
  afterEach(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it('is written 0600 as Consul names it, and read back', async () => {
    dir = await mkdtemp(join(tmpdir(), 'agent-tokens-'));
    const file = await openAgentTokenFile(dir, silentLogger);
    expect(file.read()).toEqual({});
    await file.write({ agent_recovery: 'r', replication: 'p' });
    const path = join(dir, AGENT_TOKENS_FILE);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(path, 'utf8'))).toEqual({ agent_recovery: 'r', replication: 'p' });
    expect((await openAgentTokenFile(dir, silentLogger)).read()).toEqual({ agent_recovery: 'r', replication: 'p' });
  });

  it("is warned of and left out when damaged: the config's tokens are used", async () => {
    dir = await mkdtemp(join(tmpdir(), 'agent-tokens-'));
    await writeFile(join(dir, AGENT_TOKENS_FILE), '{not json');
    const { log, warnings } = recordingLog();
    expect((await openAgentTokenFile(dir, log)).read()).toEqual({});
    expect(warnings).toEqual(['unable to load persisted tokens']);
  });

  it("reads a file of Consul's, agent_master (before 1.11) as agent_recovery, and skips empty and unknown keys", () => {
    expect(parseTokenFile('{"agent_master":"m","default":"","agent":"a","dns":"x"}')).toEqual({
      agent: 'a',
      agent_recovery: 'm',
    });
    expect(parseTokenFile('{"agent_master":"m","agent_recovery":"r"}')).toEqual({ agent_recovery: 'r' });
    expect(() => parseTokenFile('[]')).toThrow();
  });
});
