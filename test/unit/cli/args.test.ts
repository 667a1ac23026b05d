// Argument parsing with Go flag-package semantics and messages, subcommands, and help text.
import { describe, expect, it } from 'vitest';
import { UsageError, agentHelp, mainHelp, parseAgentArgs, parseCommand } from '../../../src/cli/args.js';
import { ConfigError } from '../../../src/config/errors.js';
import { loadConfig } from '../../../src/config/load.js';
import { problemsOf } from '../config/helpers.js';

const usageMessage = (fn: () => unknown, code: UsageError['code']): string => {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    expect((err as UsageError).code).toBe(code);
    expect((err as UsageError).kind).toBe('invalid');
    return (err as UsageError).message;
  }
  throw new Error('expected a usage error');
};

describe('parseAgentArgs', () => {
  it('returns nothing set for no arguments', () => {
    expect(parseAgentArgs([])).toEqual({ flags: {}, config: [], dev: false, acceptStateLoss: false });
  });

  it('maps every flag to its config key', () => {
    const args = parseAgentArgs([
      '-dev',
      '-data-dir',
      '/var/lib/svc',
      '-http-port',
      '8600',
      '-client',
      '0.0.0.0',
      '-node',
      'node-a',
      '-datacenter',
      'east',
      '-log-level',
      'DEBUG',
      '-server',
      '-etcd',
      'http://10.0.0.1:2379',
    ]);
    expect(args).toEqual({
      dev: true,
      acceptStateLoss: false,
      config: [],
      flags: {
        data_dir: '/var/lib/svc',
        ports: { http: 8600 },
        client_addr: '0.0.0.0',
        node_name: 'node-a',
        datacenter: 'east',
        log_level: 'DEBUG',
        server: true,
        cluster: { etcd: { endpoints: ['http://10.0.0.1:2379'] } },
      },
    });
  });

  it('keeps every -etcd in order, in any form', () => {
    const args = parseAgentArgs(['-etcd', 'http://a:2379', '--etcd=http://b:2379', '-etcd=http://c:2379']);
    expect(args.flags).toEqual({
      cluster: { etcd: { endpoints: ['http://a:2379', 'http://b:2379', 'http://c:2379'] } },
    });
  });

  it('reads -accept-state-loss as a one-time flag with no config key', () => {
    expect(parseAgentArgs(['-accept-state-loss'])).toEqual({
      flags: {},
      config: [],
      dev: false,
      acceptStateLoss: true,
    });
  });

  it('reads -server as a boolean apart from -dev', () => {
    expect(parseAgentArgs(['-server'])).toEqual({
      flags: { server: true },
      config: [],
      dev: false,
      acceptStateLoss: false,
    });
    expect(parseAgentArgs(['-server=false']).flags).toEqual({ server: false });
    expect(usageMessage(() => parseAgentArgs(['-etcd']), 'CLI_FLAG_NEEDS_ARGUMENT')).toBe(
      'flag needs an argument: -etcd',
    );
  });

  it('leaves the URL check to loadConfig, which names the key', () => {
    const args = parseAgentArgs(['-dev', '-etcd', 'localhost:2379']);
    expect(problemsOf({ flags: args.flags })).toEqual([
      'cluster.etcd.endpoints: expected http:// or https:// URLs such as "http://127.0.0.1:2379", got "localhost:2379"',
    ]);
  });

  it.each([[['-data-dir', '/d']], [['-data-dir=/d']], [['--data-dir', '/d']], [['--data-dir=/d']]])(
    'accepts the form %j',
    (argv) => {
      expect(parseAgentArgs(argv).flags).toEqual({ data_dir: '/d' });
    },
  );

  it('reads -dev as one flag, in every spelling', () => {
    for (const argv of [['-dev'], ['--dev'], ['-dev=true'], ['-dev=1'], ['-dev=T']])
      expect(parseAgentArgs(argv).dev).toBe(true);
    for (const argv of [['-dev=false'], ['--dev=0'], ['-dev=F']]) expect(parseAgentArgs(argv).dev).toBe(false);
  });

  it('rejects a boolean value Go would not parse', () => {
    expect(usageMessage(() => parseAgentArgs(['-dev=yes']), 'CLI_FLAG_BOOL')).toBe(
      'invalid boolean value "yes" for -dev: parse error',
    );
  });

  it('collects repeated -config-file in order, in any form', () => {
    expect(
      parseAgentArgs(['-config-file', 'a.json', '--config-file=b.json', '-config-file=c.json']).config.map(
        (c) => c.path,
      ),
    ).toEqual(['a.json', 'b.json', 'c.json']);
  });

  it('keeps -config-file and -config-dir in the order given', () => {
    expect(
      parseAgentArgs(['-config-dir', 'd1', '-config-file=a.hcl', '--config-dir=d2', '-config-file', 'b.json']).config,
    ).toEqual([
      { kind: 'dir', path: 'd1' },
      { kind: 'file', path: 'a.hcl' },
      { kind: 'dir', path: 'd2' },
      { kind: 'file', path: 'b.json' },
    ]);
  });

  it('keeps the last of a repeated single-valued flag, as Go does', () => {
    expect(parseAgentArgs(['-node', 'a', '-node=b']).flags).toEqual({ node_name: 'b' });
  });

  it('keeps values that look like numbers or booleans as strings', () => {
    expect(parseAgentArgs(['-node', '123', '-datacenter', 'true']).flags).toEqual({
      node_name: '123',
      datacenter: 'true',
    });
  });

  it('names an unknown flag the way Go does', () => {
    expect(usageMessage(() => parseAgentArgs(['-foo']), 'CLI_FLAG_UNDEFINED')).toBe(
      'flag provided but not defined: -foo',
    );
    expect(usageMessage(() => parseAgentArgs(['-dev', '--foo=1']), 'CLI_FLAG_UNDEFINED')).toBe(
      'flag provided but not defined: -foo',
    );
    expect(usageMessage(() => parseAgentArgs(['-d']), 'CLI_FLAG_UNDEFINED')).toBe('flag provided but not defined: -d');
    expect(usageMessage(() => parseAgentArgs(['--no-dev']), 'CLI_FLAG_UNDEFINED')).toBe(
      'flag provided but not defined: -no-dev',
    );
    expect(usageMessage(() => parseAgentArgs(['-dataDir', 'x']), 'CLI_FLAG_UNDEFINED')).toBe(
      'flag provided but not defined: -dataDir (did you mean -data-dir?)',
    );
    expect(usageMessage(() => parseAgentArgs(['-datacentre', 'x']), 'CLI_FLAG_UNDEFINED')).toBe(
      'flag provided but not defined: -datacentre (did you mean -datacenter?)',
    );
  });

  it('reports a flag missing its value', () => {
    expect(usageMessage(() => parseAgentArgs(['-data-dir']), 'CLI_FLAG_NEEDS_ARGUMENT')).toBe(
      'flag needs an argument: -data-dir',
    );
    expect(usageMessage(() => parseAgentArgs(['-data-dir', '-dev']), 'CLI_FLAG_NEEDS_ARGUMENT')).toBe(
      'flag needs an argument: -data-dir',
    );
    expect(usageMessage(() => parseAgentArgs(['-dev', '--config-file']), 'CLI_FLAG_NEEDS_ARGUMENT')).toBe(
      'flag needs an argument: -config-file',
    );
  });

  it('rejects an explicitly empty config file path', () => {
    expect(usageMessage(() => parseAgentArgs(['-config-file=']), 'CLI_FLAG_VALUE')).toBe(
      'invalid value "" for flag -config-file: expected a path',
    );
  });

  it('requires an integer -http-port, naming the flag', () => {
    expect(usageMessage(() => parseAgentArgs(['-http-port', 'abc']), 'CLI_FLAG_VALUE')).toBe(
      'invalid value "abc" for flag -http-port: expected an integer',
    );
    expect(usageMessage(() => parseAgentArgs(['-http-port=80.5']), 'CLI_FLAG_VALUE')).toBe(
      'invalid value "80.5" for flag -http-port: expected an integer',
    );
  });

  it('passes a negative port on for the range check', () => {
    expect(parseAgentArgs(['-http-port', '-1']).flags).toEqual({ ports: { http: -1 } });
  });

  it('rejects positional arguments', () => {
    expect(usageMessage(() => parseAgentArgs(['-dev', 'extra']), 'CLI_EXTRA_ARGUMENTS')).toBe(
      'unexpected extra arguments: [extra]',
    );
    expect(usageMessage(() => parseAgentArgs(['--', '-dev']), 'CLI_EXTRA_ARGUMENTS')).toBe(
      'unexpected extra arguments: [-dev]',
    );
  });

  it('feeds loadConfig: flags beat files', () => {
    const args = parseAgentArgs(['-dev', '-http-port=0', '-log-level', 'err']);
    const config = loadConfig({
      ...args,
      env: { hostname: () => 'h', readFile: () => '{}', isDirectory: () => undefined, hostAddresses: () => [] },
    });
    expect([config.dev, config.ports.http, config.logLevel]).toEqual([true, 0, 'error']);
  });

  it('leaves range checks to loadConfig, which names the key', () => {
    const args = parseAgentArgs(['-dev', '-http-port=70000']);
    expect(() => loadConfig(args)).toThrow(ConfigError);
    expect(() => loadConfig(args)).toThrow('ports.http: expected an integer from -1 to 65535, got 70000');
  });
});

describe('parseCommand', () => {
  it('runs the agent', () => {
    expect(parseCommand(['agent', '-dev'])).toEqual({
      name: 'agent',
      args: { flags: {}, config: [], dev: true, acceptStateLoss: false },
    });
  });

  it('prints the version', () => {
    for (const first of ['version', '-version', '--version', '-v'])
      expect(parseCommand([first])).toEqual({ name: 'version' });
  });

  it('shows help on request with exit code 0', () => {
    for (const argv of [['help'], ['-h'], ['--help'], ['-help']]) {
      expect(parseCommand(argv)).toEqual({ name: 'help', text: mainHelp(), exitCode: 0 });
    }
  });

  it('shows the agent help for help agent and agent -h', () => {
    for (const argv of [
      ['help', 'agent'],
      ['agent', '-h'],
      ['agent', '-dev', '--help'],
    ]) {
      expect(parseCommand(argv)).toEqual({ name: 'help', text: agentHelp(), exitCode: 0 });
    }
  });

  it('shows help with exit code 1 when no command is given', () => {
    expect(parseCommand([])).toEqual({ name: 'help', text: mainHelp(), exitCode: 1 });
  });

  it('rejects an unknown command', () => {
    expect(usageMessage(() => parseCommand(['serve']), 'CLI_UNKNOWN_COMMAND')).toMatch(
      /^unknown command: "serve"\n\nCommands:\n {4}agent\n {4}validate\n {4}version\n {4}kv get {2,}Reads a key/,
    );
    expect(usageMessage(() => parseCommand(['-dev']), 'CLI_UNKNOWN_COMMAND')).toMatch(/^unknown command: "-dev"\n/);
  });

  it('hands a client command to the client with its arguments', () => {
    expect(parseCommand(['kv', 'get', '-recurse', 'a/'])).toEqual({
      name: 'client',
      argv: ['kv', 'get', '-recurse', 'a/'],
    });
    expect(parseCommand(['members'])).toEqual({ name: 'client', argv: ['members'] });
  });

  it('passes agent flag errors through', () => {
    expect(usageMessage(() => parseCommand(['agent', '-foo']), 'CLI_FLAG_UNDEFINED')).toBe(
      'flag provided but not defined: -foo',
    );
  });
});

describe('help text', () => {
  const help = mainHelp();

  it('lists the commands', () => {
    for (const command of ['agent', 'version', 'help']) expect(help).toMatch(new RegExp(`^ {4}${command} `, 'm'));
  });

  it('lists every agent flag with the doc, key and default from the schema', () => {
    expect(help).toContain('  -dev\n');
    expect(help).toContain('  -config-file=<path>\n');
    expect(help).toContain(
      '  -http-port=<port>\n      Port of the HTTP API; 0 picks a free port (tests); -1 disables plain HTTP (with ports.https set). Config key: ports.http. Default: 8500.\n',
    );
    expect(help).toContain(
      '  -node=<name>\n      Name of this node in the cluster. Config key: node_name. Default: the host name.\n',
    );
    for (const flag of ['-data-dir', '-client', '-datacenter', '-log-level']) expect(help).toContain(`  ${flag}=<`);
  });
});
