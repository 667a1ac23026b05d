// Micro-bench for parseDuration (src/core/duration.ts), run on every blocking query's `wait`;
// also the worked example of bench/support/micro.ts. Run: node dist/bench/micro/duration.js
import { parseDuration } from '../../src/core/duration.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { formatMicro, measure, type MicroResult } from '../support/micro.js';

const INPUTS = ['60s', '5m', '300ms', '1h30m'] as const;

export function runDurationMicro(): MicroResult[] {
  return INPUTS.map((text) => measure(`parseDuration('${text}')`, () => parseDuration(text)));
}

if (isEntryPoint(import.meta.url)) {
  runMain(async () => {
    process.stdout.write(`${formatMicro(runDurationMicro())}\n`);
  });
}
