// Micro-bench for the compiled authorizer (src/acl/authorizer.ts): one decision for a token with
// 50 rules (target ≤ 200 ns median, well under 1 µs), compiling that token, and parsing its Rules
// text (HCL and JSON; the first HCL parse also boots the parser's wasm runtime).
// Run: node dist/bench/micro/acl-authorizer.js
import { compileAuthorizer } from '../../src/acl/authorizer.js';
import type { NamedRule, ParsedRules } from '../../src/acl/rules/model.js';
import { parseRules } from '../../src/acl/rules/parse.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { formatMicro, measure, type MicroResult } from '../support/micro.js';

/** 50 rules: 20 key, 16 service, 6 node, 2 agent, 2 session, 1 event, 1 query, 2 scalars. */
export function fiftyRules(): ParsedRules {
  const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);
  const rules = (names: string[], policy: NamedRule['policy']): NamedRule[] => names.map((name) => ({ name, policy }));
  return {
    acl: 'read',
    key: rules(
      range(8).map((i) => `app/svc-${i}/config`),
      'read',
    ),
    key_prefix: [
      ...rules(
        range(10).map((i) => `app/svc-${i}/`),
        'write',
      ),
      { name: 'app/', policy: 'list' },
      { name: '', policy: 'deny' },
    ],
    node: rules(
      range(4).map((i) => `node-${i}`),
      'write',
    ),
    node_prefix: [
      { name: 'node-', policy: 'read' },
      { name: '', policy: 'read' },
    ],
    service: [
      ...rules(
        range(10).map((i) => `web-${i}`),
        'write',
      ),
      { name: 'db', policy: 'read', intentions: 'write' },
    ],
    service_prefix: [...rules(['api-', 'api-v2-', 'batch-', 'cache-'], 'write'), { name: '', policy: 'read' }],
    agent: rules(['node-0'], 'read'),
    agent_prefix: rules([''], 'read'),
    session: rules(['node-0'], 'write'),
    session_prefix: rules([''], 'read'),
    event_prefix: rules([''], 'read'),
    query_prefix: rules([''], 'read'),
    operator: 'read',
  };
}

function countRules(rules: ParsedRules): number {
  return Object.values(rules).reduce<number>((n, v) => n + (Array.isArray(v) ? v.length : 1), 0);
}

/** The same rules as HCL text, for the parse rows. */
function toHcl(rules: ParsedRules): string {
  const lines: string[] = [];
  for (const [rule, value] of Object.entries(rules)) {
    if (typeof value === 'string') lines.push(`${rule} = "${value}"`);
    else {
      for (const r of value as NamedRule[]) {
        const intentions = r.intentions === undefined ? '' : `\n  intentions = "${r.intentions}"`;
        lines.push(`${rule} "${r.name}" {\n  policy = "${r.policy}"${intentions}\n}`);
      }
    }
  }
  return lines.join('\n');
}

export async function runAclAuthorizerMicro(): Promise<{ results: MicroResult[]; parse: string[] }> {
  const rules = fiftyRules();
  if (countRules(rules) !== 50) throw new Error(`expected 50 rules, have ${countRules(rules)}`);
  const authz = compileAuthorizer({ policies: [rules], datacenter: 'dc1', defaultPolicy: 'deny' });

  // Names are flat strings built at run time, as they are when decoded off a request.
  const svc = (s: string): string => Buffer.from(s).toString();
  const services = Array.from({ length: 64 }, (_, i) =>
    svc(['web-', 'api-v2-', 'api-', 'db', 'other-'][i % 5] + String(i)),
  );
  const keys = Array.from({ length: 64 }, (_, i) => svc(`app/svc-${i % 12}/${i % 3 === 0 ? 'config' : 'data/x'}`));
  const exactService = svc('web-7');
  const prefixService = svc('api-v2-orders');
  const missKey = svc('zzz/unmatched/key');

  const results = [
    measure('allowed(service, write) exact hit', () => authz.allowed('service', 'write', exactService)),
    measure('allowed(service, read) longest prefix', () => authz.allowed('service', 'read', prefixService)),
    measure('allowed(key, read) "" prefix fall-back', () => authz.allowed('key', 'read', missKey)),
    measure('allowed(service, write) 64 names mixed', (i) =>
      authz.allowed('service', 'write', services[i & 63] as string),
    ),
    measure('allowed(key, write) 64 names mixed', (i) => authz.allowed('key', 'write', keys[i & 63] as string)),
    measure('allowed(intention, read)', () => authz.allowed('intention', 'read', exactService)),
    measure('allowed(mesh, write) scalar', () => authz.allowed('mesh', 'write')),
    measure('anyAllowed(service, write)', () => authz.anyAllowed('service', 'write')),
    measure('keyWritePrefix("app/svc-3/")', () => authz.keyWritePrefix('app/svc-3/')),
    measure(
      'compileAuthorizer (50 rules)',
      () => compileAuthorizer({ policies: [rules], datacenter: 'dc1', defaultPolicy: 'deny' }),
      {
        iterations: 2_000,
        warmup: 1_000,
      },
    ),
  ];

  // Parsing is async and happens once per policy write; wall-clock per call is what matters.
  const hcl = toHcl(rules);
  const json = JSON.stringify(
    Object.fromEntries(
      Object.entries(rules).map(([k, v]) => [
        k,
        typeof v === 'string'
          ? v
          : Object.fromEntries(
              (v as NamedRule[]).map((r) => [
                r.name,
                { policy: r.policy, ...(r.intentions ? { intentions: r.intentions } : {}) },
              ]),
            ),
      ]),
    ),
  );
  const ms = (start: bigint): number => Number(process.hrtime.bigint() - start) / 1e6;
  let t = process.hrtime.bigint();
  const first = await parseRules(hcl);
  const firstMs = ms(t);
  if (JSON.stringify(first) !== JSON.stringify(await parseRules(json)))
    throw new Error('HCL and JSON parse differently');
  const timeAll = async (text: string, n: number): Promise<number> => {
    const times: number[] = [];
    for (let i = 0; i < n; i++) {
      t = process.hrtime.bigint();
      await parseRules(text);
      times.push(ms(t));
    }
    times.sort((a, b) => a - b);
    return times[Math.floor(n / 2)] ?? Number.NaN;
  };
  const parse = [
    `parseRules HCL, first call (boots the wasm parser): ${firstMs.toFixed(1)} ms`,
    `parseRules HCL (50 rules), median of 50: ${(await timeAll(hcl, 50)).toFixed(2)} ms`,
    `parseRules JSON (50 rules), median of 200: ${(await timeAll(json, 200)).toFixed(3)} ms`,
  ];
  return { results, parse };
}

if (isEntryPoint(import.meta.url)) {
  runMain(async () => {
    const { results, parse } = await runAclAuthorizerMicro();
    process.stdout.write(`${formatMicro(results)}\n${parse.join('\n')}\n`);
  });
}
