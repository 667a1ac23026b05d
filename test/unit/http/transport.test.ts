import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chooseTransport, isLoopback } from '../../../src/http/transport.js';
import { uwsBinaryPath } from '../../../src/http/uws-server.js';

describe('chooseTransport', () => {
  it('auto: uWS on a loopback address, node:http beyond it', () => {
    expect(chooseTransport('auto', '127.0.0.1', true)).toEqual({ name: 'uws', reason: 'loopback address' });
    expect(chooseTransport('auto', '::1', true).name).toBe('uws');
    expect(chooseTransport('auto', '0.0.0.0', true)).toEqual({ name: 'node', reason: 'address beyond loopback: strict HTTP parsing' });
    expect(chooseTransport('auto', '10.1.2.3', true).name).toBe('node');
  });

  it('auto without a native uWS binary: node:http, without a warning', () => {
    const choice = chooseTransport('auto', '127.0.0.1', false);
    expect(choice.name).toBe('node');
    expect(choice.reason).toMatch(/^no native uWebSockets\.js binary for Node /);
    expect(choice.warning).toBeUndefined();
  });

  it('takes an explicit choice, and warns when uws has no binary', () => {
    expect(chooseTransport('node', '127.0.0.1', true)).toEqual({ name: 'node', reason: 'configured' });
    expect(chooseTransport('uws', '0.0.0.0', true)).toEqual({ name: 'uws', reason: 'configured' });
    expect(chooseTransport('uws', '127.0.0.1', false).warning).toMatch(/http_config\.transport is "uws" but there is no native uWebSockets\.js binary .*serving with node:http/);
  });

  it('knows loopback addresses', () => {
    expect(['127.0.0.1', '127.5.6.7', '::1', '::ffff:127.0.0.1'].every(isLoopback)).toBe(true);
    expect(['0.0.0.0', '::', '10.0.0.1', '128.0.0.1'].some(isLoopback)).toBe(false);
  });

  it('finds the native binary for this Node in the uWS package', () => {
    expect(uwsBinaryPath()).toMatch(new RegExp(`binaries/uws_${process.platform}_${process.arch}_${process.versions.modules}\\.node$`));
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
