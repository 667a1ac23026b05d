import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chooseTransport, isLoopback } from '../../../src/http/transport.js';
import { uwsBuild, type UwsBuild } from '../../../src/http/uws-server.js';

const loads = (): UwsBuild => ({ loaded: true, package: '@based/uws', version: '6.0.1', upstream: 'v20.51.0' });
const glibcTooOld = (): UwsBuild => ({
  loaded: false,
  package: '@based/uws',
  version: '6.0.1',
  reason: 'the uWebSockets.js v20.56.0 binary for Node 24.9.0 does not load on this host (glibc 2.36, it needs 2.38)',
  remedy:
    'run Node 20 or 22, whose uWS binaries need glibc 2.27, or a distribution with glibc 2.38 or newer (Debian 13, Ubuntu 24.04)',
});
const never = (): UwsBuild => {
  throw new Error('uWS loaded where it cannot serve');
};

describe('chooseTransport', () => {
  it('auto: uWS on a loopback address, node:http beyond it without loading uWS', () => {
    expect(chooseTransport('auto', '127.0.0.1', loads)).toEqual({
      name: 'uws',
      reason: 'loopback address',
      uws: '@based/uws 6.0.1 (uWebSockets.js v20.51.0)',
    });
    expect(chooseTransport('auto', '::1', loads).name).toBe('uws');
    expect(chooseTransport('auto', '0.0.0.0', never)).toEqual({
      name: 'node',
      reason: 'address beyond loopback: strict HTTP parsing',
    });
    expect(chooseTransport('auto', '10.1.2.3', never).name).toBe('node');
    expect(chooseTransport('node', '127.0.0.1', never)).toEqual({ name: 'node', reason: 'configured' });
  });

  it('where the binary does not load: node:http, with a warning naming the cause and what to do', () => {
    const auto = chooseTransport('auto', '127.0.0.1', glibcTooOld);
    expect(auto.name).toBe('node');
    expect(auto.warning).toMatch(
      /^the uWebSockets\.js v20\.56\.0 binary for Node 24\.9\.0 does not load on this host \(glibc 2\.36, it needs 2\.38\): serving with node:http.*run Node 20 or 22.*glibc 2\.38 or newer/,
    );
    expect(chooseTransport('uws', '127.0.0.1', glibcTooOld).warning).toMatch(
      /^http_config\.transport is "uws" but the uWebSockets\.js .* serving with node:http/,
    );
  });

  it('takes an explicit uws on any address', () => {
    expect(chooseTransport('uws', '0.0.0.0', loads)).toMatchObject({ name: 'uws', reason: 'configured' });
  });

  it('knows loopback addresses', () => {
    expect(['127.0.0.1', '127.5.6.7', '::1', '::ffff:127.0.0.1'].every(isLoopback)).toBe(true);
    expect(['0.0.0.0', '::', '10.0.0.1', '128.0.0.1'].some(isLoopback)).toBe(false);
  });

  it('loads the pinned uWS build on this Node, or says why it cannot', () => {
    const build = uwsBuild();
    expect(build).toMatchObject({ package: '@based/uws', version: '6.0.1' });
    if (build.loaded) expect(build.upstream).toMatch(/^v20\.5\d\.0$/);
    else expect(build.reason).toMatch(/uWebSockets\.js/);
  });
});

describe('the uWS package', () => {
  it('is named by one file of src/ only, so that another uWS build is a change there', () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { dependencies: Record<string, string> };
    const names = Object.keys(pkg.dependencies).filter((name) => /uws|uwebsockets/i.test(name));
    expect(names).toHaveLength(1);
    const files = (readdirSync('src', { recursive: true }) as string[]).filter((f) => f.endsWith('.ts'));
    const naming = files.filter((f) => readFileSync(join('src', f), 'utf8').includes(names[0] as string));
    expect(naming).toEqual([join('http', 'uws-server.ts')]);
  });
});
