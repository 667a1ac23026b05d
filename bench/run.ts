// `npm run bench`: every sizing bench in sequence (KV, fan-out, CA, wave CPU, authorize, cluster; see
// bench/README.md), several minutes in all; each prints its table and writes .bench-out/.
import { parseHttpBenchArgs } from './support/args.js';
import { runAuthorizeBench } from './sizing/authorize.js';
import { runAuthorizeBusyHostBench } from './sizing/authorize-busy-host.js';
import { runClusterBenchMain } from './sizing/cluster.js';
import { runCaBench } from './sizing/ca.js';
import { runCaWaveCpuBench } from './sizing/ca-wave-cpu.js';
import { runFanoutBench } from './sizing/fanout.js';
import { runKvBench } from './sizing/kv.js';
import { isEntryPoint, runMain } from './support/main.js';

if (isEntryPoint(import.meta.url)) {
  runMain(async () => {
    const args = parseHttpBenchArgs();
    await runKvBench(args);
    await runFanoutBench(args.queries, args.quietWaitS);
    await runCaBench(args);
    await runCaWaveCpuBench();
    await runAuthorizeBench(args);
    await runAuthorizeBusyHostBench(args);
    await runClusterBenchMain(process.argv.slice(2));
  });
}
