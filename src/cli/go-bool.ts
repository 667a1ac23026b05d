// Go's boolean spellings (strconv.ParseBool), as its flag package takes them in `-name=value`:
// the agent's flags (args.ts) and the client commands' (client/flags.ts) read them alike.
import { UsageError } from './usage-error.js';

const GO_BOOLS: ReadonlyMap<string, boolean> = new Map([
  ...['1', 't', 'T', 'true', 'TRUE', 'True'].map((v) => [v, true] as const),
  ...['0', 'f', 'F', 'false', 'FALSE', 'False'].map((v) => [v, false] as const),
]);

export function parseGoBool(flag: string, value: string): boolean {
  const b = GO_BOOLS.get(value);
  if (b === undefined) throw new UsageError(`invalid boolean value ${JSON.stringify(value)} for -${flag}: parse error`);
  return b;
}
