// `snapshot save|restore|inspect`: Consul's `consul snapshot` with its lines (docs/decisions.md#snapshots).
// save writes the archive to `<file>.unverified` (mode 0600: it holds the CA key and token secrets),
// reads it back whole, and renames it into place; restore sends the file as it is; inspect prints
// the archive's metadata and its rows per table in Consul's layout, with Term given as Revision.
import { chmod, open, readFile, rename, unlink } from 'node:fs/promises';
import { agentError } from '../../core/errors.js';
import { decodeArchive, type Archive } from '../../snapshot/archive.js';
import type { ApiClient } from './api.js';
import { answerIndex, unexpectedAnswer } from './api.js';
import type { ClientCommand } from './command.js';
import { unreadable } from './connection.js';

const STALE_FLAG = {
  stale: {
    kind: 'bool',
    doc: 'Permit any server (not only the leader) to answer: faster, possibly stale.',
  },
} as const;

export const snapshotCommands: ClientCommand[] = [
  {
    name: 'snapshot save',
    synopsis: 'Saves snapshot of Consul server state',
    argsUsage: 'FILE',
    arity: [1, 1],
    flags: STALE_FLAG,
    async run({ api, flags, args, io }) {
      const file = args[0] as string;
      const { bytes, index } = await getArchive(api, flags.stale === true);
      const unverified = `${file}.unverified`;
      try {
        await writePrivate(unverified, bytes);
      } catch (err) {
        throw agentError('CLI_SNAPSHOT', { what: 'Error creating snapshot file', detail: errText(err) });
      }
      try {
        decodeArchive(await readFile(unverified));
      } catch (err) {
        await unlink(unverified).catch(() => undefined);
        throw agentError('CLI_SNAPSHOT', { what: 'Error verifying snapshot file', detail: errText(err) });
      }
      await rename(unverified, file);
      io.out(`Saved and verified snapshot to index ${index}\n`);
      return 0;
    },
  },
  {
    name: 'snapshot restore',
    synopsis: 'Restores snapshot of Consul server state',
    argsUsage: 'FILE',
    arity: [1, 1],
    flags: {},
    async run({ api, args, io }) {
      const file = args[0] as string;
      let bytes: Buffer;
      try {
        bytes = await readFile(file);
      } catch (err) {
        throw unreadable(err, file, 'Error opening snapshot file');
      }
      await api.expectOk('PUT', '/v1/snapshot', bytes, 'restoring snapshot');
      io.out('Restored snapshot\n');
      return 0;
    },
  },
  {
    name: 'snapshot inspect',
    synopsis: 'Displays information about a Consul snapshot file',
    argsUsage: 'FILE',
    arity: [1, 1],
    flags: {},
    async run({ args, io }) {
      const file = args[0] as string;
      let bytes: Buffer;
      try {
        bytes = await readFile(file);
      } catch (err) {
        throw unreadable(err, file, 'Error opening snapshot file');
      }
      let archive: Archive;
      try {
        archive = decodeArchive(bytes);
      } catch (err) {
        throw agentError('CLI_SNAPSHOT', { what: 'Error verifying snapshot', detail: errText(err) });
      }
      io.out(formatInspect(archive));
      return 0;
    },
  },
];

/** Consul's pretty inspect layout (text/tabwriter: min width 8, padding 6), Term as our Revision. */
function formatInspect(archive: Archive): string {
  const { meta } = archive;
  const head = tabulate([
    [' ID', meta.ID],
    [' Size', String(archive.size)],
    [' Index', String(meta.Index)],
    [' Revision', String(meta.Index)],
    [' Version', String(meta.Version)],
    [' Datacenter', meta.Datacenter],
    [' Backend', meta.Backend],
  ]);
  const stats = [...archive.tableBytes.entries()]
    .map(([name, size]) => ({ name, count: meta.Tables[name] ?? 0, size }))
    .sort((a, b) => b.size - a.size || (a.name < b.name ? -1 : 1));
  if (meta.Private > 0) stats.push({ name: '(private entries)', count: meta.Private, size: 0 });
  const total = stats.reduce((n, s) => n + s.size, 0);
  const table = tabulate([
    [' Type', 'Count', 'Size', ''],
    [' ----', '----', '----', ''],
    ...stats.map((s) => [` ${s.name}`, String(s.count), byteSize(s.size), '']),
    [' ----', '----', '----', ''],
    [' Total', '', byteSize(total), ''],
  ]);
  return `${head}\n\n${table}\n`;
}

/** Lines of cells, every cell but each line's last padded to its column's width (Go's tabwriter). */
function tabulate(lines: readonly (readonly string[])[]): string {
  const widths: number[] = [];
  for (const cells of lines) {
    cells.slice(0, -1).forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 8, cell.length + 6);
    });
  }
  return lines
    .map((cells) => cells.map((cell, i) => (i < cells.length - 1 ? cell.padEnd(widths[i] ?? 0) : cell)).join(''))
    .join('\n');
}

/** Consul's ByteSize: one decimal, `.0` dropped, units B to TB. */
function byteSize(bytes: number): string {
  if (bytes === 0) return '0';
  const units: [number, string][] = [
    [1024 ** 4, 'TB'],
    [1024 ** 3, 'GB'],
    [1024 ** 2, 'MB'],
    [1024, 'KB'],
  ];
  for (const [size, unit] of units) if (bytes >= size) return `${(bytes / size).toFixed(1).replace(/\.0$/, '')}${unit}`;
  return `${bytes}B`;
}

/** GET /v1/snapshot as bytes, with the index it was taken at. */
async function getArchive(api: ApiClient, stale: boolean): Promise<{ bytes: Buffer; index: string }> {
  const answer = await api.call('GET', `/v1/snapshot${stale ? '?stale' : ''}`).catch((err: unknown) => {
    throw agentError('CLI_SNAPSHOT', { what: 'Error saving snapshot', detail: errText(err) });
  });
  if (answer.status < 200 || answer.status > 299) throw unexpectedAnswer(answer, 'saving snapshot');
  return { bytes: answer.bytes, index: answerIndex(answer) };
}

/** The archive holds the CA key and token secrets: only its owner may read it. */
async function writePrivate(path: string, bytes: Buffer): Promise<void> {
  const file = await open(path, 'w', 0o600);
  try {
    await file.writeFile(bytes);
    await file.sync();
  } finally {
    await file.close();
  }
  // A file that was there before keeps its mode through open(): set it.
  await chmod(path, 0o600);
}

function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
