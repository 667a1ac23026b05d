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
  it("JSON: level by name, ISO time, one component per line (a child replaces the parent's), secrets redacted", () => {
    const { log, lines } = capture('json');
    log.info({ a: 1 }, 'root');
    log.child({ component: 'state' }).child({ x: 2 }).warn({ token: 'secret' }, 'child');
    const [root, child] = lines.map((l) => l.trim());
    expect(JSON.parse(root as string)).toMatchObject({ level: 'info', component: 'agent', a: 1, msg: 'root' });
    expect(JSON.parse(root as string).time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect((child?.match(/"component"/g) ?? []).length).toBe(1);
    expect(JSON.parse(child as string)).toMatchObject({
      level: 'warn',
      component: 'state',
      x: 2,
      token: '[redacted]',
      msg: 'child',
    });
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

  it('writes an error as one line, its stack (and causes) only at debug level, in text and JSON', () => {
    const text = capture('text');
    const json = capture('json');
    const cause = Object.assign(new Error("EACCES: permission denied, mkdir '/x'"), { code: 'EACCES' });
    const err = new Error('cannot create directory /x', { cause });
    for (const { log } of [text, json]) {
      log.error({ err }, 'start-up failed');
      log.setLevel('debug');
      log.error({ err }, 'start-up failed');
    }
    const [terse, verbose] = text.lines;
    expect(terse).toMatch(
      / \[ERROR\] agent: start-up failed: error="cannot create directory \/x: permission denied"\n$/,
    );
    expect(terse).not.toMatch(/\n\s+at /);
    expect(verbose).toMatch(
      /^.* \[ERROR\] agent: start-up failed: error="cannot create directory \/x: permission denied"\n {2}Error: cannot create directory \/x\n\s+at /,
    );
    expect(verbose).toContain("caused by: Error: EACCES: permission denied, mkdir '/x'");
    const [plain, full] = json.lines.map((l) => JSON.parse(l) as { err: Record<string, unknown> });
    expect(plain?.err).toEqual({ type: 'Error', message: 'cannot create directory /x: permission denied' });
    expect(full?.err.stack).toMatch(/^Error: cannot create directory \/x\n\s+at /);
  });

  it('keeps logging to the console when the log file cannot be written, saying so once', () => {
    const lines: string[] = [];
    const sink = { write: (s: string) => lines.push(s) } as unknown as NodeJS.WritableStream;
    let full = true;
    const file = {
      write: (): void => {
        if (full) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      },
    };
    const log = createLogger('info', sink, 'json', file);
    log.info({}, 'one');
    log.info({}, 'two');
    full = false;
    log.info({}, 'three');
    expect(lines.map((l) => JSON.parse(l) as { msg: string; err?: { message: string } })).toEqual([
      expect.objectContaining({ msg: 'one' }),
      expect.objectContaining({
        msg: 'cannot write to log_file; lines go to the console only',
        err: { message: 'no space left on device' },
      }),
      expect.objectContaining({ msg: 'two' }),
      expect.objectContaining({ msg: 'three' }),
    ]);
  });

  it("text: Consul's line format", () => {
    const { log, lines } = capture('text');
    log.info({ address: '127.0.0.1:8500', note: 'two words', n: 3, none: null }, 'svc-agent started');
    log.child({ component: 'state' }).warn({ err: new Error('disk full') }, 'refused');
    expect(lines[0]).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \[INFO\] {2}agent: svc-agent started: address=127\.0\.0\.1:8500 note="two words" n=3 none=null\n$/,
    );
    expect(lines[1]).toMatch(/ \[WARN\] {2}state: refused: error="disk full"\n$/);
  });
});

describe('formatTextLine', () => {
  const line = (o: object) => formatTextLine(JSON.stringify({ time: 'T', component: 'x', ...o }));

  it('writes levels padded as hclog does, and an error as its message, with a stack only when the line has one', () => {
    expect(line({ level: 'debug', msg: 'm' })).toBe('T [DEBUG] x: m\n');
    expect(line({ level: 'info', msg: '', k: 'v' })).toBe('T [INFO]  x: k=v\n');
    expect(line({ level: 'error', msg: 'boom', err: { message: 'bad' } })).toBe('T [ERROR] x: boom: error=bad\n');
    expect(line({ level: 'warn', msg: 'boom', err: { message: 'bad', stack: 'Error: bad\n    at f' } })).toBe(
      'T [WARN]  x: boom: error=bad\n  Error: bad\n      at f\n',
    );
    expect(formatTextLine('not json\n')).toBe('not json\n');
  });

  it('shows values unescaped as hclog does: quotes only where a value holds a space, a quote or the like', () => {
    expect(line({ level: 'info', msg: 'config reloaded', applied: ['log_level'], restartNeeded: [] })).toBe(
      'T [INFO]  x: config reloaded: applied=[log_level] restartNeeded=[]\n',
    );
    expect(line({ level: 'info', msg: 'm', keys: ['a.b', 'two words', 3], n: 3, ok: true, none: null })).toBe(
      'T [INFO]  x: m: keys=[a.b, "two words", 3] n=3 ok=true none=null\n',
    );
    expect(
      line({
        level: 'info',
        msg: 'm',
        addr: '127.0.0.1:8500',
        path: '/tmp/a_b-c',
        eq: 'a=b',
        empty: '',
        q: 'say "hi"',
        comma: 'a,b',
      }),
    ).toBe('T [INFO]  x: m: addr=127.0.0.1:8500 path=/tmp/a_b-c eq=a=b empty="" q="say \\"hi\\"" comma="a,b"\n');
    expect(line({ level: 'info', msg: 'm', recovery: { snapshotIndex: 0, replayedRecords: 2 } })).toBe(
      'T [INFO]  x: m: recovery={"snapshotIndex":0,"replayedRecords":2}\n',
    );
  });

  it('writes a value of several lines below the line, as hclog does', () => {
    expect(
      line({ level: 'error', msg: 'config reload failed', err: { message: 'a.json: x: bad\nb.json: y: bad' }, n: 1 }),
    ).toBe('T [ERROR] x: config reload failed: n=1\n  error=\n  | a.json: x: bad\n  | b.json: y: bad\n');
    expect(line({ level: 'error', msg: 'failed', err: { message: 'a\nb' } })).toBe(
      'T [ERROR] x: failed:\n  error=\n  | a\n  | b\n',
    );
  });

  describe('taps (GET /v1/agent/monitor)', () => {
    it('hand a tap the lines of its level, below the agent’s too, which the console does not show', () => {
      const { log, lines } = capture('text');
      const child = log.child({ component: 'agent.http' });
      const tapped: string[] = [];
      const untap = log.tap('debug', (line) => tapped.push(line));
      expect(child.isLevelEnabled?.('debug')).toBe(true);
      child.debug({ url: '/v1/kv/a' }, 'Request finished');
      child.trace({}, 'below the tap');
      child.info({}, 'shown');
      expect(tapped.map((l) => JSON.parse(l).msg)).toEqual(['Request finished', 'shown']);
      expect(JSON.parse(tapped[0] as string)).toMatchObject({ level: 'debug', component: 'agent.http' });
      expect(lines).toEqual([expect.stringMatching(/\[INFO\] {2}agent\.http: shown\n$/)]);
      untap();
      expect(child.isLevelEnabled?.('debug')).toBe(false);
      child.info({}, 'after');
      expect(tapped).toHaveLength(2);
    });

    it('give each tap its own level, and keep the lowest while several are open', () => {
      const { log, lines } = capture('json');
      const warns: string[] = [];
      const traces: string[] = [];
      const untapWarn = log.tap('warn', (line) => warns.push(line));
      const untapTrace = log.tap('trace', (line) => traces.push(line));
      log.trace({}, 't');
      log.info({}, 'i');
      log.error({}, 'e');
      expect(warns.map((l) => JSON.parse(l).msg)).toEqual(['e']);
      expect(traces.map((l) => JSON.parse(l).msg)).toEqual(['t', 'i', 'e']);
      expect(lines.map((l) => JSON.parse(l).msg)).toEqual(['i', 'e']);
      untapTrace();
      expect(log.isLevelEnabled?.('trace')).toBe(false);
      // A reload to debug while a tap at warn is open: the agent's own level rules the console.
      log.setLevel('debug');
      log.debug({}, 'd');
      expect(lines.map((l) => JSON.parse(l).msg)).toEqual(['i', 'e', 'd']);
      untapWarn();
      untapWarn();
      expect(log.isLevelEnabled?.('debug')).toBe(true);
    });
  });
});
