// Headless Chromium for tests that look at a page: Debian's chromium (scripts/ensure-chromium.sh
// finds or installs it) driven by playwright-core, never a browser download.
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { chromium, type Browser } from 'playwright-core';

/** Flags that keep Chromium off this machine's closed network and out of a root sandbox. */
const ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

export async function launchChromium(): Promise<Browser> {
  const { stdout } = await promisify(execFile)(resolve(import.meta.dirname, '../../../scripts/ensure-chromium.sh'), {
    timeout: 600_000,
  });
  return chromium.launch({ executablePath: stdout.trim(), headless: true, args: ARGS });
}
