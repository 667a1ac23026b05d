// The agent's own tokens: the config sets them, the API replaces one, a reload puts the config's back.
import { describe, expect, it } from 'vitest';
import { AgentTokens } from '../../../src/acl/agent-tokens.js';

describe('AgentTokens', () => {
  it("acts with the config's default token, and with none (anonymous) when it is empty", () => {
    expect(new AgentTokens({ default: 'cfg-default', agent: 'cfg-agent' }).defaultToken()).toBe('cfg-default');
    expect(new AgentTokens({}).defaultToken()).toBeUndefined();
    expect(new AgentTokens({ default: '' }).defaultToken()).toBeUndefined();
  });

  it('takes a default token set through the API, and an empty one clears it', () => {
    const tokens = new AgentTokens({ default: 'cfg-default' });
    tokens.set('default', 'api-default');
    expect(tokens.defaultToken()).toBe('api-default');
    tokens.set('default', '');
    expect(tokens.defaultToken()).toBeUndefined();
  });

  it('keeps the agent token apart from the default token', () => {
    const tokens = new AgentTokens({ default: 'cfg-default' });
    tokens.set('agent', 'api-agent');
    expect(tokens.defaultToken()).toBe('cfg-default');
  });

  it("puts the config's tokens back on a reload, as Consul does without token persistence", () => {
    const tokens = new AgentTokens({ default: 'cfg-default' });
    tokens.set('default', 'api-default');
    tokens.load({ default: 'cfg-default' });
    expect(tokens.defaultToken()).toBe('cfg-default');
  });
});
