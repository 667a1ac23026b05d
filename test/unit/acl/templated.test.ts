// Consul 1.17's templated policies: every template's rules built from its variables equal the rules
// its rendered text parses to; the list Consul shows; variable validation with Consul's texts; the
// preview's synthetic policy.
import { describe, expect, it } from 'vitest';
import { parseRules } from '../../../src/acl/rules/parse.js';
import {
  findTemplate,
  listTemplates,
  renderTemplate,
  syntheticPolicy,
  templatedRules,
  templateVariablesError,
} from '../../../src/acl/templated.js';

describe('built-in templates', () => {
  it("are Consul 1.17's seven, sorted by name as Go writes the map", () => {
    expect(listTemplates().map((t) => t.TemplateName)).toEqual([
      'builtin/api-gateway',
      'builtin/dns',
      'builtin/node',
      'builtin/nomad-client',
      'builtin/nomad-server',
      'builtin/service',
      'builtin/workload-identity',
    ]);
  });

  it.each(listTemplates().map((t) => [t.TemplateName]))(
    '%s grants exactly what its rendered text parses to',
    async (name) => {
      const base = findTemplate(name)!;
      const rendered = renderTemplate(base, 'web-1');
      const stored = {
        TemplateID: base.TemplateID,
        TemplateName: name,
        ...(base.Schema === '' ? {} : { TemplateVariables: { Name: 'web-1' } }),
      };
      expect(templatedRules(stored, 'dc1')).toEqual(await parseRules(rendered));
    },
  );

  it('scoped to other datacenters, grants nothing here', () => {
    const stored = { TemplateID: 'x', TemplateName: 'builtin/dns', Datacenters: ['dc2'] };
    expect(templatedRules(stored, 'dc1')).toBeUndefined();
    expect(templatedRules(stored, 'dc2')).toBeDefined();
  });
});

describe('templateVariablesError', () => {
  const service = findTemplate('builtin/service')!;
  it.each([
    [undefined, '1 error occurred:\n\t* Invalid type. Expected: object, given: null\n\n'],
    [{}, '1 error occurred:\n\t* name is required\n\n'],
    [{ Name: '' }, '1 error occurred:\n\t* name is required\n\n'],
    [
      { Name: 'Web' },
      `service identity "Web" has an invalid name. Only lowercase alphanumeric characters, '-' and '_' are allowed`,
    ],
    [{ Name: 'web' }, undefined],
  ])('builtin/service with %j → %j', (variables, expected) => {
    expect(templateVariablesError(service, variables)).toBe(expected);
  });

  it('a template without a schema validates nothing', () => {
    expect(templateVariablesError(findTemplate('builtin/dns')!, undefined)).toBeUndefined();
  });

  it('words a bad node name as Consul does (two spaces included)', () => {
    expect(templateVariablesError(findTemplate('builtin/node')!, { Name: 'N' })).toBe(
      `node identity "N"  has an invalid name. Only lowercase alphanumeric characters, '-' and '_' are allowed`,
    );
  });
});

describe('syntheticPolicy', () => {
  it("names itself as Consul does: the rules in hex, then FNV-128a's hash of nothing", () => {
    const policy = syntheticPolicy(findTemplate('builtin/service')!, 'api');
    expect(policy.Rules).toBe(
      '\nservice "api" {\n\tpolicy = "write"\n}\nservice "api-sidecar-proxy" {\n\tpolicy = "write"\n}\nservice_prefix "" {\n\tpolicy = "read"\n}\nnode_prefix "" {\n\tpolicy = "read"\n}',
    );
    expect(policy.ID.startsWith('0a73657276696365202261706922')).toBe(true);
    expect(policy.ID.endsWith('6c62272e07bb014262b821756295c58d')).toBe(true);
    expect(policy.Name).toBe(`synthetic-policy-${policy.ID}`);
    expect(policy.Description).toBe('synthetic policy generated from templated policy: builtin/service');
  });
});
