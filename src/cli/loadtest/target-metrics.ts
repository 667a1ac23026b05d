// The target's own numbers (svc-agent's JSON metrics, GET /v1/agent/metrics), read before and after
// a run so that the result shows the generator's counts beside the target's.
import type { ApiClient } from '../client/api.js';
import type { CrossCheck } from './scenario.js';

export type MetricValues = ReadonlyMap<string, number>;

/** Counters (their Count) and gauges (their Value) by name; empty when the target serves none. */
export async function readMetrics(api: ApiClient): Promise<MetricValues> {
  const answer = await api.call('GET', '/v1/agent/metrics');
  const values = new Map<string, number>();
  if (answer.status !== 200) return values;
  const body = JSON.parse(answer.text) as {
    Counters?: { Name: string; Count: number }[];
    Gauges?: { Name: string; Value: number }[];
  };
  for (const c of body.Counters ?? []) values.set(c.Name, c.Count);
  for (const g of body.Gauges ?? []) values.set(g.Name, g.Value);
  return values;
}

/** The change of the sum of `names` between two readings; null when any is missing. */
export function delta(before: MetricValues, after: MetricValues, names: readonly string[]): number | null {
  let sum = 0;
  for (const name of names) {
    const a = before.get(name);
    const b = after.get(name);
    if (a === undefined || b === undefined) return null;
    sum += b - a;
  }
  return sum;
}

export function crossCheck(counter: string, generatorCounted: number, targetCounted: number | null): CrossCheck {
  return {
    counter,
    generatorCounted,
    targetCounted,
    agrees: targetCounted === null ? null : targetCounted === generatorCounted,
  };
}
