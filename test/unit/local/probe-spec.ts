// A probe's settings with the defaults the probe tests share; each test names what it changes.
import type { ProbeSpec } from '../../../src/local/probe-protocol.js';

export function probeSpec(kind: ProbeSpec['kind'], target: string, more: Partial<ProbeSpec> = {}): ProbeSpec {
  return {
    kind,
    target,
    method: '',
    header: {},
    body: '',
    disableRedirects: false,
    useTls: false,
    tlsServerName: '',
    tlsSkipVerify: false,
    intervalMs: 10_000,
    timeoutMs: 5_000,
    outputMaxSize: 4096,
    successBeforePassing: 0,
    failuresBeforeWarning: 0,
    failuresBeforeCritical: 0,
    initialStatus: 'critical',
    ...more,
  };
}
