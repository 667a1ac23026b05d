// `acl templated-policy list|read|preview`, printed as Consul's CLI prints them: the names; a
// template's name and input variables; the synthetic policy a preview renders.
import { usageError } from '../../usage-error.js';
import { FORMAT_FLAG, SERVER_FLAGS, formatOf, jsonText, record, type ClientCommand, type Context } from '../command.js';

interface Templated {
  TemplateName: string;
  Schema: string;
  Template: string;
  Description: string;
}

interface Policy {
  ID: string;
  Name: string;
  Description: string;
  Rules: string;
}

function printer<T>(flags: Context['flags'], pretty: (value: T) => string): (value: T) => string {
  return formatOf(flags) === 'json' ? jsonText : pretty;
}

// Consul's CLI knows each template's variables by heart (its formatter).
const INPUTS: Readonly<Record<string, string>> = {
  'builtin/service':
    '\n\tName: String - Required - The name of the service.\nExample usage:\n\tconsul acl token create -templated-policy builtin/service -var name:api\n',
  'builtin/node':
    '\n\tName: String - Required - The node name.\nExample usage:\n\tconsul acl token create -templated-policy builtin/node -var name:node-1\n',
  'builtin/dns': ' None\nExample usage:\n\tconsul acl token create -templated-policy builtin/dns\n',
};

function templatedText(t: Templated): string {
  return `Name:            ${t.TemplateName}\nInput variables:${INPUTS[t.TemplateName] ?? '   None\n'}`;
}

function nameOf(flags: Context['flags']): string {
  if (typeof flags.name !== 'string') throw usageError('CLI_FLAG_MISSING', { detail: "Missing required '-name' flag" });
  return flags.name;
}

export const aclTemplatedCommands: ClientCommand[] = [
  {
    name: 'acl templated-policy list',
    synopsis: 'Lists the templated policies',
    argsUsage: '',
    arity: [0, 0],
    flags: { ...FORMAT_FLAG, ...SERVER_FLAGS },
    async run({ api, flags, io }) {
      const show = printer(flags, (all: Record<string, Templated>) =>
        Object.keys(all)
          .sort()
          .map((n) => `${n}\n`)
          .join(''),
      );
      io.out(show(await api.json('GET', '/v1/acl/templated-policies', undefined, 'listing templated policies')));
      return 0;
    },
  },
  {
    name: 'acl templated-policy read',
    synopsis: 'Shows a templated policy (-name)',
    argsUsage: '',
    arity: [0, 0],
    flags: { name: { kind: 'string', doc: 'The templated policy name.' }, ...FORMAT_FLAG, ...SERVER_FLAGS },
    async run({ api, flags, io }) {
      const show = printer(flags, templatedText);
      const path = `/v1/acl/templated-policy/name/${nameOf(flags)}`;
      io.out(show(await api.json<Templated>('GET', path, undefined, 'reading the templated policy')));
      return 0;
    },
  },
  {
    name: 'acl templated-policy preview',
    synopsis: 'Shows the policy a templated policy renders (-name, -var name:VALUE)',
    argsUsage: '',
    arity: [0, 0],
    flags: {
      name: { kind: 'string', doc: 'The templated policy name.' },
      var: { kind: 'list', doc: 'A variable, name:VALUE; repeatable.' },
      ...FORMAT_FLAG,
    },
    async run({ api, flags, io }) {
      const show = printer(
        flags,
        (p: Policy) =>
          `${record([
            ['ID', p.ID],
            ['Name', p.Name],
            ['Description', p.Description],
            ['Datacenters', ''],
          ])}\nRules:\n${p.Rules}\n`,
      );
      const variables: Record<string, string> = {};
      for (const v of (flags.var as readonly string[] | undefined) ?? []) {
        const at = v.indexOf(':');
        if (at < 0 || v.slice(0, at).toLowerCase() !== 'name')
          throw usageError('CLI_FLAG_VALUE', { flag: 'var', value: v, reason: 'want name:VALUE' });
        variables.Name = v.slice(at + 1);
      }
      const path = `/v1/acl/templated-policy/preview/${nameOf(flags)}`;
      io.out(show(await api.json<Policy>('POST', path, JSON.stringify(variables), 'previewing the templated policy')));
      return 0;
    },
  },
];
