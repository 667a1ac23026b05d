// The import rules `npm test` enforces (npm run check:imports): no cycle between files, and arrows
// one way, http → domain (connect → acl, config, state; cluster → config, state; acl, kv → state) → core; workers import src,
// never the reverse; src never imports bench/ or test/; the composition roots (src/cli/,
// src/agent.ts, src/index.ts) may import anything in src, and nothing else in src imports them.
// test/unit/import-rules.test.ts proves each rule fails on a bad import.

const ROOTS = '^src/(cli/|agent\\.ts$|index\\.ts$)';

/** A domain folder may import itself and the layers named below it, nothing else of ours. */
function layer(name, below, comment) {
  const allowed = [name, ...below].join('|');
  return {
    name: `${name}-layer`,
    severity: 'error',
    comment,
    from: { path: `^src/${name}/` },
    to: { path: '^src/', pathNot: `^src/(${allowed})/` },
  };
}

module.exports = {
  forbidden: [
    {
      name: 'no-cycle',
      severity: 'error',
      comment: 'Files import each other in a cycle: move what both need into a lower module.',
      from: { path: '^(src|workers|bench)/' },
      to: { circular: true },
    },
    {
      name: 'core-layer',
      severity: 'error',
      comment: 'core/ is the bottom layer: it imports only core/.',
      from: { path: '^src/core/' },
      to: { path: '^src/', pathNot: '^src/core/' },
    },
    layer('state', ['core'], 'state/ is the lowest domain layer: it imports only core/.'),
    layer('config', ['core'], 'config/ imports only core/.'),
    layer('acl', ['state', 'core'], 'acl/ imports only state/ and core/.'),
    layer('kv', ['state', 'core'], 'kv/ imports only state/ and core/.'),
    layer('cluster', ['config', 'state', 'core'], 'cluster/ (membership, etcd leadership) imports only config/, state/ and core/.'),
    layer('connect', ['acl', 'config', 'state', 'core'], 'connect/ imports only acl/, config/, state/ and core/.'),
    {
      name: 'connect-subfolders-below',
      severity: 'error',
      comment: "connect/'s subfolders import from connect/ itself only the shared decision.ts and spiffe.ts.",
      from: { path: '^src/connect/[^/]+/' },
      to: { path: '^src/connect/[^/]+\\.ts$', pathNot: '^src/connect/(decision|spiffe)\\.ts$' },
    },
    {
      name: 'connect-shared-files-low',
      severity: 'error',
      comment: "connect/decision.ts and connect/spiffe.ts, which connect/'s subfolders build on, import none of them.",
      from: { path: '^src/connect/(decision|spiffe)\\.ts$' },
      to: { path: '^src/connect/[^/]+/' },
    },
    {
      name: 'only-roots-import-roots',
      severity: 'error',
      comment: 'Only the composition roots (src/cli/, src/agent.ts, src/index.ts) import a composition root.',
      from: { path: '^(src|workers)/', pathNot: ROOTS },
      to: { path: ROOTS },
    },
    {
      name: 'no-http-below-http',
      severity: 'error',
      comment: 'Only the HTTP layer and the composition roots import src/http/.',
      from: { path: '^(src|workers)/', pathNot: `^src/http/|${ROOTS}` },
      to: { path: '^src/http/' },
    },
    {
      name: 'src-not-workers',
      severity: 'error',
      comment: 'src/ never imports workers/: what both sides share lives in src/, the worker entry imports it.',
      from: { path: '^src/' },
      to: { path: '^workers/' },
    },
    {
      name: 'product-not-bench-or-test',
      severity: 'error',
      comment: 'src/ and workers/ never import bench/ or test/.',
      from: { path: '^(src|workers)/' },
      to: { path: '^(bench|test)/' },
    },
    {
      name: 'no-unresolved-import',
      severity: 'error',
      comment: 'An import the checker cannot resolve is an arrow it cannot check.',
      from: { path: '^(src|workers|bench)/' },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    // Type-only imports are arrows too: a domain file must not even name an HTTP type.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^dist/' },
  },
};
