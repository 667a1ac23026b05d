// KV GET over HTTP with ACLs off vs on (default deny, a token whose policy has 50 rules), in the
// same run with the same tool: the target is that enabling ACLs costs < 10% throughput.
// Rounds alternate the two agents so drift on a shared machine hits both alike.
// Run: node dist/bench/sizing/acl-kv.js [--duration 10] [--warmup 2] [--rounds 2]
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ParsedRules } from '../../src/acl/rules/model.js';
import { fiftyRules } from '../micro/acl-authorizer.js';
import { AGENT_MISSING, agentBuilt, startAgent } from '../support/agent.js';
import { parseHttpBenchArgs } from '../support/args.js';
import { GET_KEY, VALUE } from '../support/fixtures.js';
import { kvUrl } from '../support/kv-client.js';
import type { LoadResult } from '../support/load.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { BENCH_OUT } from '../support/paths.js';
import { pickLoadTool } from '../support/pick-tool.js';
import { waitForQuiet } from '../support/quiet.js';
import { formatTable, round, writeJson } from '../support/report.js';
import { median } from '../support/stats.js';

const MANAGEMENT = '5b0f2f1e-3c7a-4d2b-8e6f-9a1b2c3d4e5f';

/** ParsedRules back into Consul's JSON rule syntax (JSON is valid rule text). */
function consulJsonRules(rules: ParsedRules): string {
  const out: Record<string, unknown> = {};
  for (const [rule, value] of Object.entries(rules)) {
    if (typeof value === 'string') out[rule] = value;
    else if (Array.isArray(value)) {
      out[rule] = Object.fromEntries(
        value.map((r: { name: string; policy: string; intentions?: string }) => [
          r.name,
          { policy: r.policy, ...(r.intentions ? { intentions: r.intentions } : {}) },
        ]),
      );
    }
  }
  return JSON.stringify(out);
}

/** The micro-bench's 50 rules, one key rule traded for a grant on the benched key (bench/get). */
function benchRules(): ParsedRules {
  const rules = fiftyRules();
  return {
    ...rules,
    key: (rules.key ?? []).slice(1),
    key_prefix: [...(rules.key_prefix ?? []), { name: 'bench/', policy: 'read' }],
  };
}

async function api(
  port: number,
  method: string,
  path: string,
  token: string,
  body?: unknown,
): Promise<Record<string, unknown>> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: { 'X-Svc-Token': token },
    body: body === undefined ? null : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 200)}`);
  return JSON.parse(text) as Record<string, unknown>;
}

export async function runAclKvBench(argv: readonly string[]): Promise<Record<string, unknown>> {
  if (!agentBuilt()) throw new Error(AGENT_MISSING);
  const args = parseHttpBenchArgs(argv);
  const tool = await pickLoadTool(args.tool);
  const configFile = join(BENCH_OUT, 'acl-on.json');
  await mkdir(BENCH_OUT, { recursive: true });
  await writeFile(
    configFile,
    JSON.stringify({ acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: MANAGEMENT } } }),
  );

  const results: Record<'off' | 'on', LoadResult[]> = { off: [], on: [] };
  const rounds = Math.max(2, args.rounds);
  for (let round = 0; round < rounds; round++) {
    for (const mode of round % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const)) {
      const agent = await startAgent('dev', mode === 'on' ? ['-config-file', configFile] : []);
      try {
        let token = 'no-acls-this-header-is-ignored';
        if (mode === 'on') {
          await api(agent.port, 'PUT', '/v1/acl/policy', MANAGEMENT, {
            Name: 'fifty',
            Rules: consulJsonRules(benchRules()),
          });
          const created = await api(agent.port, 'PUT', '/v1/acl/token', MANAGEMENT, { Policies: [{ Name: 'fifty' }] });
          token = created.SecretID as string;
        }
        await fetch(kvUrl(agent.port, GET_KEY), { method: 'PUT', body: VALUE, headers: { 'X-Svc-Token': MANAGEMENT } });
        const request = { url: kvUrl(agent.port, GET_KEY), method: 'GET' as const, headers: { 'X-Svc-Token': token } };
        const check = await fetch(request.url, { headers: request.headers });
        if (check.status !== 200) throw new Error(`probe answered ${check.status}: ${await check.text()}`);
        if (args.quietWaitS > 0) await waitForQuiet(args.quietWaitS * 1000);
        const settings = { durationS: args.durationS, connections: args.connections, threads: args.threads };
        if (args.warmupS > 0) await tool.run(request, { ...settings, durationS: args.warmupS });
        results[mode].push(await tool.run(request, settings));
        process.stderr.write(
          `  round ${round + 1} ACLs ${mode}: ${round_(results[mode].at(-1)!.rps)} req/s (probe ${check.status})\n`,
        );
      } finally {
        await agent.stop();
      }
    }
  }
  const rps = (mode: 'off' | 'on'): number => median(results[mode].map((r) => r.rps));
  const p99 = (mode: 'off' | 'on'): number => median(results[mode].map((r) => r.p99Ms));
  const ratio = rps('on') / rps('off');
  const rows = [
    ['ACLs off', round(rps('off')), round(p99('off')), '1.00'],
    ['ACLs on (deny, 50 rules)', round(rps('on')), round(p99('on')), ratio.toFixed(3)],
  ];
  process.stdout.write(`\nKV GET with ACLs off vs on (${tool.name}, median of ${rounds} rounds each)\n`);
  process.stdout.write(`${formatTable(['row', 'req/s', 'p99 ms', 'ratio'], rows)}\n`);
  process.stdout.write(`throughput cost of ACLs: ${((1 - ratio) * 100).toFixed(1)}% (target < 10%)\n`);
  const report = { tool: tool.name, rounds, off: results.off, on: results.on, ratio };
  await writeJson('acl-kv', report);
  return report;
}

function round_(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

if (isEntryPoint(import.meta.url)) runMain(async () => void (await runAclKvBench(process.argv.slice(2))));
