// Local registrations made through the API survive a restart: they are kept in
// data_dir/local-services.json (a temp file renamed into place), rewritten after each change of
// the API's services and checks and each TTL update. Config-file registrations are not kept:
// the files give them again at start.
import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../core/log.js';
import type { LocalEvent, LocalState } from './local-state.js';
import type { LocalCheck, LocalService } from './model.js';
import { PRIVATE_FILE_MODE } from '../core/private-files.js';

export const LOCAL_SERVICES_FILE = 'local-services.json';
const FORMAT_VERSION = 1;

interface Stored {
  readonly version: number;
  readonly services: readonly LocalService[];
  readonly checks: readonly LocalCheck[];
}

export class LocalPersistence {
  private readonly path: string;
  private writing: Promise<void> = Promise.resolve();
  private pending: Promise<void> | undefined;
  private unsubscribe: (() => void) | undefined;

  constructor(
    dataDir: string,
    private readonly log: Logger,
  ) {
    this.path = join(dataDir, LOCAL_SERVICES_FILE);
  }

  /** Restores the saved registrations into `state`; none when there is no file or it is damaged. */
  async load(state: LocalState): Promise<void> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        this.log.warn({ err, path: this.path }, 'could not read the local services file; starting without it');
      return;
    }
    try {
      const stored = JSON.parse(text) as Partial<Stored>;
      if (stored.version !== FORMAT_VERSION || !Array.isArray(stored.services) || !Array.isArray(stored.checks))
        throw new Error('not a local services file');
      state.restore(stored.services, stored.checks);
    } catch (err) {
      this.log.warn({ err, path: this.path }, 'the local services file is damaged; starting without it');
    }
  }

  /** Saves after every change that matters to a restart. */
  follow(state: LocalState): void {
    this.unsubscribe = state.onChange((event) => {
      if (matters(event)) void this.saveSoon(state);
    });
  }

  /** Resolves once a write that includes every change made so far is on disk. */
  saveSoon(state: LocalState): Promise<void> {
    this.pending ??= this.writing.then(() => {
      this.pending = undefined;
      return this.write(state);
    });
    return this.pending;
  }

  /** Waits for the writes already asked for; nothing is written after this. */
  async close(): Promise<void> {
    this.unsubscribe?.();
    await (this.pending ?? this.writing);
  }

  private async write(state: LocalState): Promise<void> {
    const { services, checks } = state.snapshot();
    const body: Stored = {
      version: FORMAT_VERSION,
      services: services.filter((s) => s.source === 'api'),
      checks: checks.filter((c) => c.source === 'api'),
    };
    const temp = `${this.path}.tmp`;
    const run = (async () => {
      try {
        await writeFile(temp, JSON.stringify(body), { mode: PRIVATE_FILE_MODE });
        await rename(temp, this.path);
      } catch (err) {
        this.log.warn({ err, path: this.path }, 'could not write the local services file');
      }
    })();
    this.writing = run;
    return run;
  }
}

/** A change the file holds: the API's registrations and its TTL checks' updates (config ones are not kept). */
function matters(event: LocalEvent): boolean {
  switch (event.type) {
    case 'service-registered':
      return event.service.source === 'api';
    case 'check-registered':
      return event.check.source === 'api';
    case 'check-status':
    case 'check-output':
      return event.check.type === 'ttl' && event.check.source === 'api';
    case 'service-deregistered':
    case 'check-deregistered':
      return true;
  }
}
