// `svc-agent loadtest` past saturation, against a deliberately slow target started here (a server
// on 127.0.0.1 that answers at a fixed rate, whatever it is asked): an open loop at ten times its
// capacity still ends on time, reports what the target served and what it dropped, and fails its
// rate threshold; stages report each step; -find-max finds the target's rate; compare refuses
// unlike runs unless -force.
import { readFile } from 'node:fs/promises';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, tempDir } from './support/agent-process.js';

/**
 * Answers at most `rate` calls per second, oldest first; a tick that a busy machine ran late catches
 * up to BURST calls, so the target holds its rate under load. Counts what it answered.
 */
/** 200 ms of the target's rate. */
const BURST = 40;

class SlowTarget {
  answered = 0;
  firstAt = 0;
  lastAt = 0;
  private readonly queue: ServerResponse[] = [];
  private readonly server: Server;
  private readonly timer: NodeJS.Timeout;
  private served = 0;
  private readonly start = performance.now();

  constructor(readonly rate: number) {
    this.server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (this.firstAt === 0) this.firstAt = performance.now();
        this.queue.push(res);
      });
    });
    this.timer = setInterval(() => this.answer(), 2);
  }

  private answer(): void {
    const due = Math.floor(((performance.now() - this.start) * this.rate) / 1000);
    while (this.served < due && this.queue.length > 0) {
      this.served++;
      this.answered++;
      this.lastAt = performance.now();
      this.queue.shift()!.end('ok');
    }
    // Credit accrues only while calls wait (a late tick), never while idle, so no step starts with a burst.
    this.served = this.queue.length === 0 ? due : Math.max(this.served, due - BURST);
  }

  listen(): Promise<number> {
    return new Promise((done) =>
      this.server.listen(0, '127.0.0.1', () => done((this.server.address() as { port: number }).port)),
    );
  }

  /** Calls answered from now on, and the rate at which they were (the target's own count and clock). */
  reset(): void {
    this.answered = 0;
    this.firstAt = 0;
    this.lastAt = 0;
  }

  close(): Promise<void> {
    clearInterval(this.timer);
    this.server.closeAllConnections();
    return new Promise((done) => this.server.close(() => done()));
  }
}

interface Result {
  settings: { mode: string; rate: number | null; stages: { ms: number; rate: number }[] | null };
  summary: {
    requests: number;
    askedRps: number | null;
    achievedRps: number;
    late: number;
    dropped: number;
    elapsedMs: number;
  };
  stages: { rate: number; achievedRps: number; requests: number; latencyUs: { p99: number } }[];
  findMax: { highestHeldRps: number | null; steps: { askedRps: number; held: boolean }[] } | null;
  thresholds: { threshold: string; passed: boolean; actual: number | null }[];
}

const CAPACITY = 200;

describe('svc-agent loadtest past saturation', () => {
  let target: SlowTarget;
  let port: number;
  let dir: { path: string; remove: () => Promise<void> };
  beforeAll(async () => {
    dir = await tempDir('svc-loadtest-sat-');
    target = new SlowTarget(CAPACITY);
    port = await target.listen();
  });
  afterAll(async () => {
    await target.close();
    await dir.remove();
  });
  const loadtest = (...args: string[]) =>
    runCli(
      [
        'loadtest',
        'http',
        '-http-addr',
        `127.0.0.1:${port}`,
        '-path',
        '/',
        '-warmup',
        '0s',
        // Enough calls queued at the target that its rate, not the generator's reaction time on a
        // loaded machine, limits what is served.
        '-connections',
        '32',
        ...args,
      ],
      {},
      180_000,
    );
  const read = async (file: string): Promise<Result> =>
    JSON.parse(await readFile(join(dir.path, file), 'utf8')) as Result;

  it('ten times the capacity: ends on time, reports what the target served and what was dropped, and fails its rate threshold', async () => {
    target.reset();
    const asked = CAPACITY * 10;
    const run = await loadtest(
      '-rate',
      `${asked}/s`,
      '-duration',
      '2s',
      '-threshold',
      'rate>=0.95*asked',
      '-threshold',
      'errors<1%',
      '-out',
      join(dir.path, 'over.json'),
    );
    const endedMs = performance.now() - target.firstAt;
    expect(run.code, run.stderr).toBe(2);
    // From the first call the target saw to the generator's exit: -duration plus 2 s at most.
    expect(endedMs).toBeLessThan(2000 + 2000);
    const r = await read('over.json');
    expect(r.summary.askedRps).toBe(asked);
    // What the target counted, at the rate its own clock saw.
    const targetRps = (target.answered / (target.lastAt - target.firstAt)) * 1000;
    expect(r.summary.requests).toBe(target.answered);
    expect(Math.abs(r.summary.achievedRps - targetRps) / targetRps).toBeLessThan(0.1);
    // Every call due was sent or dropped; most were dropped.
    expect(r.summary.requests + r.summary.dropped).toBe(asked * 2);
    expect(r.summary.dropped).toBeGreaterThan(asked);
    expect(r.summary.late).toBeGreaterThan(0);
    expect(r.thresholds).toEqual([
      { threshold: 'rate>=0.95*asked', passed: false, actual: expect.any(Number) as number, unit: 'x asked' },
      { threshold: 'errors<1%', passed: true, actual: 0, unit: '%' },
    ]);
    expect(run.stdout).toMatch(
      new RegExp(`the target served [\\d,]+/s of the 2,000/s asked over 2\\.0 s; [\\d,]+ calls dropped`),
    );
    expect(run.stdout).toContain('FAIL rate>=0.95*asked');
    expect(run.stderr).toContain('1 of 2 thresholds failed: FAIL rate>=0.95*asked');
    expect(run.stdout).toMatch(/client cpu +\d+% of one core \(\d+% of the machine's \d+ cores\)/);
  });

  it('a rate the target holds passes its thresholds and exits 0; -hgrm writes the histogram', async () => {
    const run = await loadtest(
      '-rate',
      `${CAPACITY / 2}/s`,
      '-duration',
      '1s',
      '-threshold',
      'rate>=0.5*asked',
      '-threshold',
      'p99<5s',
      '-out',
      join(dir.path, 'under.json'),
      '-hgrm',
      join(dir.path, 'under.hgrm'),
    );
    expect(run.code, run.stderr).toBe(0);
    const r = await read('under.json');
    expect(r.summary.requests + r.summary.dropped).toBe(CAPACITY / 2);
    expect(r.thresholds.every((t) => t.passed)).toBe(true);
    // -hgrm: HdrHistogram's percentile text, milliseconds, with its count.
    const hgrm = await readFile(join(dir.path, 'under.hgrm'), 'utf8');
    expect(hgrm).toMatch(/^ +Value +Percentile +TotalCount 1\/\(1-Percentile\)\n/);
    expect(hgrm).toMatch(new RegExp(`#\\[Max += +[\\d.]+, Total count += +${r.summary.requests}\\]`));
  });

  it('stages: each step has its own achieved rate and latency', async () => {
    const run = await loadtest(
      '-stages',
      `1s:${CAPACITY / 2},1s:${CAPACITY * 3}`,
      '-out',
      join(dir.path, 'stages.json'),
      '-report',
      join(dir.path, 'stages.html'),
    );
    expect(run.code, run.stderr).toBe(0);
    const r = await read('stages.json');
    expect(r.settings.stages).toEqual([
      { ms: 1000, rate: CAPACITY / 2 },
      { ms: 1000, rate: CAPACITY * 3 },
    ]);
    expect(r.stages.map((s) => s.rate)).toEqual([CAPACITY / 2, CAPACITY * 3]);
    const [first, second] = r.stages as [Result['stages'][0], Result['stages'][0]];
    expect(Math.abs(first.achievedRps - CAPACITY / 2) / (CAPACITY / 2)).toBeLessThan(0.15);
    // The second asks three times what the target serves: it gets about the target's rate.
    expect(second.achievedRps).toBeLessThan(CAPACITY * 1.3);
    expect(second.latencyUs.p99).toBeGreaterThan(first.latencyUs.p99);
    expect(run.stdout).toMatch(/stage 1 +1\.0 s at 100\/s: achieved \d+\/s/);
    expect(run.stdout).toMatch(/stage 2 +1\.0 s at 600\/s: achieved \d+\/s/);
    expect(await readFile(join(dir.path, 'stages.html'), 'utf8')).toMatch(
      /<tr><th>2<\/th><td>hold<\/td><td class="n">1\.0 s<\/td><td class="n">600\/s<\/td><td class="n">\d+\/s<\/td>/,
    );
  });

  it('-find-max finds the rate the target holds', async () => {
    // The rate criterion (achieved at least 95% of asked) finds it; latency on a shared machine would only add noise.
    // Steps of the tool's shortest, 5 s: a step's last answers land in its drain, which a loaded host stretches.
    const step = ['-duration', '5s', '-threshold', 'errors<1%'];
    const run = await loadtest(
      '-find-max',
      '-rate',
      `${CAPACITY * 0.75}/s`,
      ...step,
      '-out',
      join(dir.path, 'max.json'),
    );
    expect(run.code, run.stderr).toBe(0);
    const r = await read('max.json');
    expect(r.findMax!.steps.some((s) => !s.held)).toBe(true);
    const found = r.findMax!.highestHeldRps!;
    expect(Math.abs(found - CAPACITY) / CAPACITY, run.stdout).toBeLessThan(0.15);
    expect(run.stdout).toMatch(new RegExp(`highest rate held +${found}/s`));
  }, 240_000);

  it('compare refuses unlike runs, and with -force says first what differs', async () => {
    const files = [join(dir.path, 'over.json'), join(dir.path, 'stages.json')];
    const refused = await runCli(['loadtest', 'compare', ...files]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      'compare refuses unlike runs: rate 2000/s vs stages 1s:100,1s:600 (-force compares them anyway)\n',
    );
    const forced = await runCli(['loadtest', 'compare', ...files, '-force', '-report', join(dir.path, 'forced.html')]);
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.stdout.split('\n')[0]).toBe('UNLIKE RUNS compared (-force): rate 2000/s vs stages 1s:100,1s:600');
    expect(await readFile(join(dir.path, 'forced.html'), 'utf8')).toMatch(
      /<body>\n<p class="warning">UNLIKE RUNS compared \(-force\): rate 2000\/s vs stages/,
    );
    // Like runs compare without a word.
    const like = await runCli(['loadtest', 'compare', files[0]!, files[0]!]);
    expect(like.code, like.stderr).toBe(0);
    expect(like.stdout).toMatch(/^\n +A +B +B \/ A\n/);
  });
});
