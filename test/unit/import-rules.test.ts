// The import check in `npm test` (package.json check:imports, rules in .dependency-cruiser.cjs)
// run on small trees of our layout: a clean one passes, and each kind of bad import fails with
// the rule and the import named, so the check cannot pass silently.
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const REPO = resolve(import.meta.dirname, '../..');
const SCRIPT = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
  .scripts['check:imports'] as string;
const dirs: string[] = [];

/** A tree with the repository's check config and tsconfig, and `files` (path → source). */
function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'import-rules-'));
  dirs.push(dir);
  for (const name of ['.dependency-cruiser.cjs', 'tsconfig.json']) copyFileSync(join(REPO, name), join(dir, name));
  for (const folder of ['src', 'workers', 'bench']) mkdirSync(join(dir, folder));
  for (const [path, source] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), source);
  }
  return dir;
}

interface Checked {
  readonly status: number | null;
  readonly report: string;
}

/** Runs the npm script's command in `dir`: its exit status and report. */
function check(dir: string): Promise<Checked> {
  const bin = join(REPO, 'node_modules', '.bin');
  const env = { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}` };
  const run = spawn(SCRIPT, { cwd: dir, shell: true, env });
  let report = '';
  run.stdout.on('data', (chunk: Buffer) => (report += chunk.toString()));
  run.stderr.on('data', (chunk: Buffer) => (report += chunk.toString()));
  return new Promise((done, fail) => {
    run.once('error', fail);
    run.once('close', (status) => done({ status, report }));
  });
}

const CLEAN = {
  'src/core/errors.ts': 'export const E = 1;\n',
  'src/state/store.ts': "import { E } from '../core/errors.js';\nexport const S = E;\n",
  'src/acl/tokens.ts': "import { S } from '../state/store.js';\nexport const T = S;\n",
  'src/connect/decision.ts': "import { E } from '../core/errors.js';\nexport const D = E;\n",
  'src/connect/intentions/index.ts': "import { D } from '../decision.js';\nexport const I = D;\n",
  'src/connect/authorize.ts':
    "import { T } from '../acl/tokens.js';\nimport { I } from './intentions/index.js';\nexport const A = T + I;\n",
  'src/http/routes.ts': "import { A } from '../connect/authorize.js';\nexport const R = A;\n",
  'src/agent/index.ts': "import { R } from '../http/routes.js';\nexport const G = R;\n",
  'workers/sign.worker.ts': "import { D } from '../src/connect/decision.js';\nexport const W = D;\n",
  // The state backends, each behind its entry, on what they share; the cluster wires etcd to the CA.
  'src/state/etcd/client.ts': "import { E } from '../../core/errors.js';\nexport const C = E;\n",
  'src/state/etcd/index.ts':
    "import { C } from './client.js';\nimport { S } from '../store.js';\nexport const Etcd = C + S;\n",
  'src/state/embedded/wal.ts': "import { S } from '../store.js';\nexport const Wal = S;\n",
  'src/state/embedded/index.ts': "import { Wal } from './wal.js';\nexport const Embedded = Wal;\n",
  'src/connect/ca/keys.ts': "import { S } from '../../state/store.js';\nexport const K = S;\n",
  'src/cluster/ca.ts':
    "import { K } from '../connect/ca/keys.js';\nimport { Etcd } from '../state/etcd/index.js';\nexport const CA = K + Etcd;\n",
  'src/index.ts':
    "import { Embedded } from './state/embedded/index.js';\nimport { CA } from './cluster/ca.js';\nexport const Lib = Embedded + CA;\n",
  // The load generator, used by the loadtest client and its worker only.
  'src/loadgen/types.ts': "import { E } from '../core/errors.js';\nexport const L = E;\n",
  'src/cli/loadtest/run.ts': "import { L } from '../../loadgen/types.js';\nexport const Run = L;\n",
  'workers/loadtest.worker.ts': "import { L } from '../src/loadgen/types.js';\nexport const LW = L;\n",
};

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

// One tree holding every kind of bad import, checked once; each must be reported on its own.
const BAD: [string, Record<string, string>, string][] = [
  [
    'a cycle between files',
    {
      'src/core/a.ts': "import { b } from './b.js';\nexport const a = b;\n",
      'src/core/b.ts': "import { a } from './a.js';\nexport const b = () => a;\n",
    },
    'no-cycle: src/core/a.ts → \n      src/core/b.ts →\n      src/core/a.ts',
  ],
  [
    'a domain file importing http/',
    { 'src/kv/entries.ts': "import { R } from '../http/routes.js';\nexport const K = R;\n" },
    'kv-layer: src/kv/entries.ts → src/http/routes.ts',
  ],
  [
    'a type-only import into http/',
    { 'src/core/json.ts': "import type { R } from '../http/routes.js';\nexport type J = typeof R;\n" },
    'core-layer: src/core/json.ts → src/http/routes.ts',
  ],
  [
    'state importing a higher domain layer',
    { 'src/state/rows.ts': "import { T } from '../acl/tokens.js';\nexport const X = T;\n" },
    'state-layer: src/state/rows.ts → src/acl/tokens.ts',
  ],
  [
    'catalog importing http/',
    { 'src/catalog/rows.ts': "import { R } from '../http/routes.js';\nexport const X = R;\n" },
    'catalog-layer: src/catalog/rows.ts → src/http/routes.ts',
  ],
  [
    'acl importing connect',
    { 'src/acl/rules.ts': "import { A } from '../connect/authorize.js';\nexport const X = A;\n" },
    'acl-layer: src/acl/rules.ts → src/connect/authorize.ts',
  ],
  [
    'a file connect/ subfolders build on importing one of them',
    { 'src/connect/spiffe.ts': "import { I } from './intentions/index.js';\nexport const P = I;\n" },
    'connect-shared-files-low: src/connect/spiffe.ts → src/connect/intentions/index.ts',
  ],
  [
    'src importing workers/',
    { 'src/connect/signer.ts': "import { W } from '../../workers/sign.worker.js';\nexport const X = W;\n" },
    'src-not-workers: src/connect/signer.ts → workers/sign.worker.ts',
  ],
  [
    'src importing test/',
    {
      'src/core/clock.ts': "import { F } from '../../test/fake.js';\nexport const C = F;\n",
      'test/fake.ts': 'export const F = 1;\n',
    },
    'product-not-bench-or-test: src/core/clock.ts → test/fake.ts',
  ],
  [
    'a handler importing a composition root',
    { 'src/http/handlers/kv.ts': "import { G } from '../../agent/index.js';\nexport const X = G;\n" },
    'only-roots-import-roots: src/http/handlers/kv.ts → src/agent/index.ts',
  ],
  [
    'loadgen importing a domain layer',
    { 'src/loadgen/scheduler.ts': "import { S } from '../state/store.js';\nexport const X = S;\n" },
    'loadgen-layer: src/loadgen/scheduler.ts → src/state/store.ts',
  ],
  [
    'the agent importing the load generator',
    { 'src/http/load-route.ts': "import { L } from '../loadgen/types.js';\nexport const X = L;\n" },
    'loadgen-for-loadtest-only: src/http/load-route.ts → src/loadgen/types.ts',
  ],
  [
    "a file state/'s backends share importing a backend",
    { 'src/state/rows-view.ts': "import { Etcd } from './etcd/index.js';\nexport const X = Etcd;\n" },
    'state-shared-below-backends: src/state/rows-view.ts → src/state/etcd/index.ts',
  ],
  [
    'one state backend importing the other',
    { 'src/state/embedded/mirror.ts': "import { Etcd } from '../etcd/index.js';\nexport const X = Etcd;\n" },
    'backends-apart: src/state/embedded/mirror.ts → src/state/etcd/index.ts',
  ],
  [
    "cluster/ reaching past the etcd store's entry",
    { 'src/cluster/members.ts': "import { C } from '../state/etcd/client.js';\nexport const X = C;\n" },
    'etcd-internals: src/cluster/members.ts → src/state/etcd/client.ts',
  ],
  [
    "a bench reaching past the embedded store's entry",
    { 'bench/micro/wal.ts': "import { Wal } from '../../src/state/embedded/wal.js';\nexport const X = Wal;\n" },
    'embedded-internals: bench/micro/wal.ts → src/state/embedded/wal.ts',
  ],
  [
    'connect/ importing the etcd store',
    { 'src/connect/ca/remote.ts': "import { Etcd } from '../../state/etcd/index.js';\nexport const X = Etcd;\n" },
    'connect-no-etcd: src/connect/ca/remote.ts → src/state/etcd/index.ts',
  ],
  [
    'an import the checker cannot resolve',
    { 'src/core/ids.ts': "import { Z } from './missing.js';\nexport const I = Z;\n" },
    'no-unresolved-import: src/core/ids.ts → ./missing.js',
  ],
];

// Both trees are checked at once, before the tests; the hook's timeout is only a hang guard.
let clean: Checked;
let bad: Checked;
beforeAll(async () => {
  [clean, bad] = await Promise.all([
    check(tree(CLEAN)),
    check(tree(Object.assign({}, CLEAN, ...BAD.map(([, files]) => files)))),
  ]);
}, 180_000);

describe('import check', () => {
  it('passes a tree whose arrows all point one way', () => {
    expect(clean.report).not.toMatch(/error/);
    expect(clean.status).toBe(0);
  });

  it('fails on a tree with bad imports', () => {
    expect(bad.status).not.toBe(0);
  });

  it.each(BAD.map(([what, , line]) => [what, line]))('reports %s, naming the rule and the import', (_what, line) => {
    expect(bad.report).toContain(`error ${line}`);
  });
});
