// The import rules `npm test` enforces (npm run check:imports): no cycle between files, and arrows
// one way, http → domain (cluster → connect, sessions, catalog, config, state; connect → acl, config, state; catalog → acl,
// state; acl, kv → state; loadgen → none) → core; workers import src, never the reverse; src never
// imports bench/ or test/; the composition roots (src/cli/, src/agent/, src/index.ts) may import anything in src, and
// nothing else in src imports them. In state/, the two backends (embedded/, etcd/) sit on what
// they share, never import each other, and are used only through their index.ts; connect/ knows
// no etcd. The load generator (loadgen/) is the loadtest client's, apart from the agent.
// test/unit/import-rules.test.ts proves each rule fails on a bad import.

const ROOTS = '^src/(cli/|agent/|index\\.ts$)';

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
    layer('catalog', ['acl', 'state', 'core'], 'catalog/ imports only acl/, state/ and core/.'),
    layer(
      'sessions',
      ['catalog', 'kv', 'state', 'core'],
      'sessions/ (sessions and KV locks) imports only catalog/, kv/, state/ and core/.',
    ),
    layer(
      'txn',
      ['sessions', 'catalog', 'kv', 'state', 'core'],
      'txn/ (transactions) imports only sessions/, catalog/, kv/, state/ and core/.',
    ),
    layer(
      'snapshot',
      ['sessions', 'state', 'core'],
      'snapshot/ (the archive format, save and restore) imports only sessions/ (TTL sessions get new leases), state/ and core/.',
    ),
    layer(
      'cluster',
      ['connect', 'sessions', 'catalog', 'config', 'state', 'core'],
      'cluster/ (membership, etcd leadership, the CA and session leases wired to etcd) imports only connect/, sessions/, catalog/ (the member record it shares with the departed-member rows), config/, state/ and core/.',
    ),
    layer('loadgen', ['core'], 'loadgen/ (the load generator the loadtest client drives) imports only core/.'),
    {
      name: 'loadgen-for-loadtest-only',
      severity: 'error',
      comment:
        'Only the loadtest client (src/cli/loadtest/, workers/loadtest.worker.ts) imports loadgen/: the agent never runs it.',
      from: {
        path: '^(src|workers|bench)/',
        pathNot: '^(src/loadgen/|src/cli/loadtest/|workers/loadtest\\.worker\\.ts$)',
      },
      to: { path: '^src/loadgen/' },
    },
    {
      name: 'state-shared-below-backends',
      severity: 'error',
      comment: "state/'s shared files (interface types, memory tables, watch hub, snapshots) import neither backend.",
      from: { path: '^src/state/[^/]+\\.ts$' },
      to: { path: '^src/state/(embedded|etcd)/' },
    },
    {
      name: 'backends-apart',
      severity: 'error',
      comment: 'The embedded store and the etcd store never import each other: what both need lives in src/state/.',
      from: { path: '^src/state/(embedded|etcd)/' },
      to: { path: '^src/state/(embedded|etcd)/', pathNot: '^src/state/$1/' },
    },
    {
      name: 'etcd-internals',
      severity: 'error',
      comment: 'Outside src/state/etcd/, the etcd store is used through its public entry, src/state/etcd/index.ts.',
      from: { path: '^(src|workers|bench)/', pathNot: '^src/state/etcd/' },
      to: { path: '^src/state/etcd/', pathNot: '^src/state/etcd/index\\.ts$' },
    },
    {
      name: 'embedded-internals',
      severity: 'error',
      comment:
        'Outside src/state/embedded/, the embedded store is used through its public entry, src/state/embedded/index.ts.',
      from: { path: '^(src|workers|bench)/', pathNot: '^src/state/embedded/' },
      to: { path: '^src/state/embedded/', pathNot: '^src/state/embedded/index\\.ts$' },
    },
    {
      name: 'connect-no-etcd',
      severity: 'error',
      comment:
        "connect/ knows no etcd: the CA's cluster parts declare the small interfaces they need, and src/cluster/ wires etcd's.",
      from: { path: '^src/connect/' },
      to: { path: '^src/state/etcd/' },
    },
    layer('connect', ['acl', 'config', 'state', 'core'], 'connect/ imports only acl/, config/, state/ and core/.'),
    layer(
      'config-entries',
      ['connect', 'acl', 'state', 'core'],
      'config-entries/ (/v1/config: the kinds, their validation, the service-intentions view over the intentions table) imports only connect/, acl/, state/ and core/.',
    ),
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
      comment: 'Only the composition roots (src/cli/, src/agent/, src/index.ts) import a composition root.',
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
