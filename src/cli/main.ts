#!/usr/bin/env node
// `svc-agent`: parses the command line and runs the command: the agent (run-agent.ts, loaded only
// then), a client command against a running agent (client/), validate, help or the version.
// Exit codes: 0 after a clean stop or success, 1 on an error (2: `intention check` denied).
import { VERSION } from '../version.js';
import { fail } from './fail.js';

async function main(argv: readonly string[]): Promise<number> {
  // A client command loads the client alone: the agent's flags and help come from the config
  // schema, which took most of a `kv get`'s start (about 0.4 s of 0.5 s on a loaded host).
  const client = await import('./client/index.js');
  if (argv[0] !== undefined && client.CLIENT_WORDS.has(argv[0])) return client.runClient(argv, process.env);
  const { parseCommand } = await import('./args.js');
  let command;
  try {
    command = parseCommand(argv);
  } catch (err) {
    return fail(err);
  }
  switch (command.name) {
    case 'help':
      (command.exitCode === 0 ? process.stdout : process.stderr).write(`${command.text}\n`);
      return command.exitCode;
    case 'version':
      process.stdout.write(`svc-agent v${VERSION}\n`);
      return 0;
    case 'agent':
      return (await import('./run-agent.js')).runAgent(command.args);
    case 'client':
      return client.runClient(command.argv, process.env);
    case 'loadtest':
      return (await import('./loadtest/cli.js')).runLoadtest(command.argv, process.env);
    case 'validate':
      return (await import('./validate.js')).runValidate(command.argv);
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`==> unexpected error: ${String(err)}\n`);
    process.exit(1);
  },
);
