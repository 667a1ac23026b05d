// Go's boolean spellings (strconv.ParseBool), as its flag package takes them in `-name=value`:
// the agent's flags (args.ts), the client commands' (client/flags.ts) and their CONSUL_HTTP_SSL read them alike.
import { usageError } from './usage-error.js';

const GO_BOOLS: ReadonlyMap<string, boolean> = new Map([
  ...['1', 't', 'T', 'true', 'TRUE', 'True'].map((v) => [v, true] as const),
  ...['0', 'f', 'F', 'false', 'FALSE', 'False'].map((v) => [v, false] as const),
]);

export function parseGoBool(flag: string, value: string): boolean {
  const b = goBool(value);
  if (b === undefined) throw usageError('CLI_FLAG_BOOL', { flag, value });
  return b;
}

/** The boolean `value` spells in Go, or undefined when it spells none. */
export const goBool = (value: string): boolean | undefined => GO_BOOLS.get(value);
