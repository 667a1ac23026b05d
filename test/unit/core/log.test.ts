import { describe, expect, it } from 'vitest';
import { createLogger, type LogFormat } from '../../../src/core/log.js';
import { formatTextLine } from '../../../src/core/log-text.js';

/** pino writes each line synchronously to a plain object's write(). */
function capture(format: LogFormat) {
  const lines: string[] = [];
  const sink = { write: (s: string) => lines.push(s) } as unknown as NodeJS.WritableStream;
  return { log: createLogger('info', sink, format), lines };
}

describe('createLogger', () => {
  it('JSON: level by name, ISO time, one component per line (a child replaces the parent\'s), secrets redacted', () => {
    const { log, lines } = capture('json');
    log.info({ a: 1 }, 'root');
    log.child({ component: 'state' }).child({ x: 2 }).warn({ token: 'secret' }, 'child');
    const [root, child] = lines.map((l) => l.trim());
    expect(JSON.parse(root as string)).toMatchObject({ level: 'info', component: 'agent', a: 1, msg: 'root' });
    expect(JSON.parse(root as string).time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect((child?.match(/"component"/g) ?? []).length).toBe(1);
    expect(JSON.parse(child as string)).toMatchObject({ level: 'warn', component: 'state', x: 2, token: '[redacted]', msg: 'child' });
  });

  it('changes the level of the root and of every child made before', () => {
    const { log, lines } = capture('json');
    const child = log.child({ component: 'c' });
    child.debug({}, 'hidden');
    expect(child.isLevelEnabled?.('debug')).toBe(false);
    log.setLevel('debug');
    expect(log.level).toBe('debug');
    child.debug({}, 'shown');
    log.debug({}, 'root shown');
    log.child({ component: 'later' }).debug({}, 'later shown');
    expect(lines.map((l) => JSON.parse(l).msg)).toEqual(['shown', 'root shown', 'later shown']);
    log.setLevel('warn');
    child.info({}, 'hidden again');
    expect(lines).toHaveLength(3);
  });

  it('text: Consul\'s line format', () => {
    const { log, lines } = capture('text');
    log.info({ address: '127.0.0.1:8500', note: 'two words', n: 3, none: null }, 'svc-agent started');
    log.child({ component: 'state' }).warn({ err: new Error('disk full') }, 'refused');
    expect(lines[0]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \[INFO\] {2}agent: svc-agent started: address=127\.0\.0\.1:8500 note="two words" n=3 none=null\n$/);
    expect(lines[1]).toMatch(/ \[WARN\] {2}state: refused: error="disk full"\n$/);
  });
});

describe('formatTextLine', () => {
  it('writes levels padded as hclog does, objects as quoted JSON, and an error\'s stack at error level', () => {
    const line = (o: object) => formatTextLine(JSON.stringify({ time: 'T', component: 'x', ...o }));
    expect(line({ level: 'debug', msg: 'm' })).toBe('T [DEBUG] x: m\n');
    expect(line({ level: 'error', msg: 'm', list: [1, 2], o: { a: 'b c' } })).toBe('T [ERROR] x: m: list=[1,2] o="{\\"a\\":\\"b c\\"}"\n');
    expect(line({ level: 'info', msg: '', k: 'v' })).toBe('T [INFO]  x: k=v\n');
    expect(line({ level: 'error', msg: 'boom', err: { message: 'bad', stack: 'Error: bad\n    at f' } })).toBe('T [ERROR] x: boom: error=bad\n  Error: bad\n      at f\n');
    expect(formatTextLine('not json\n')).toBe('not json\n');
  });
});
