import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../../src/core/clock.js';
import { Metrics } from '../../../src/core/metrics.js';

describe('Metrics', () => {
  it("snapshots counters and gauges in name order, in Consul's shape", () => {
    const clock = new FakeClock(Date.parse('2026-11-22T08:55:00Z'));
    const metrics = new Metrics(clock);
    let parked = 3;
    metrics.gauge('svc.z.parked', () => parked);
    metrics.gauge('svc.a.index', () => 7);
    const hits = metrics.counter('svc.x.hit');
    metrics.counter('svc.b.none');
    hits.inc();
    hits.inc(4);
    expect(metrics.counter('svc.x.hit')).toBe(hits);
    clock.advance(10_000);
    parked = 1;
    expect(metrics.snapshot()).toEqual({
      Timestamp: '2026-11-22 08:55:10 +0000 UTC',
      Gauges: [
        { Name: 'svc.a.index', Value: 7, Labels: {} },
        { Name: 'svc.z.parked', Value: 1, Labels: {} },
      ],
      Points: [],
      Counters: [
        { Name: 'svc.b.none', Count: 0, Rate: 0, Sum: 0, Min: 0, Max: 0, Mean: 0, Stddev: 0, Labels: {} },
        { Name: 'svc.x.hit', Count: 5, Rate: 0.5, Sum: 5, Min: 1, Max: 1, Mean: 1, Stddev: 0, Labels: {} },
      ],
      Samples: [],
    });
  });
});
