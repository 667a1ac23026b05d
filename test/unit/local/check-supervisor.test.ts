// CheckSupervisor on a fake clock: TTL expiry and Consul's output texts, output truncation,
// alias checks following the aliased service, and DeregisterCriticalServiceAfter.
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../../src/core/clock.js';
import { CheckSupervisor } from '../../../src/local/check-supervisor.js';
import { readCheckDefinition, readServiceDefinition } from '../../../src/local/definition.js';
import { LocalState } from '../../../src/local/local-state.js';
import { StatusThreshold } from '../../../src/local/probes/status-threshold.js';
import { TailBuffer } from '../../../src/local/probes/output.js';
import { agentErrorOf } from '../../support/errors.js';

function setup(outputMaxSize?: number) {
  const clock = new FakeClock(1_000);
  const state = new LocalState('n1');
  const supervisor = new CheckSupervisor(state, outputMaxSize === undefined ? { clock } : { clock, outputMaxSize });
  return { clock, state, supervisor };
}

describe('CheckSupervisor', () => {
  it('turns a TTL check critical when its TTL runs out, keeping the last output', () => {
    const { clock, state, supervisor } = setup();
    state.addCheck(readCheckDefinition({ Name: 'ttl', TTL: '10s' }));
    clock.advance(10_000);
    expect(state.check('ttl')).toMatchObject({ status: 'critical', output: 'TTL expired' });
    supervisor.updateTtl('ttl', 'passing', 'all good');
    clock.advance(9_999);
    expect(state.check('ttl')?.status).toBe('passing');
    supervisor.updateTtl('ttl', 'warning', 'slow');
    clock.advance(9_999);
    expect(state.check('ttl')?.status).toBe('warning');
    clock.advance(1);
    expect(state.check('ttl')).toMatchObject({
      status: 'critical',
      output: 'TTL expired (last output before timeout follows): slow',
    });
  });

  it('cuts a long TTL output as Consul does', () => {
    const { state, supervisor } = setup(8);
    state.addCheck(readCheckDefinition({ Name: 'ttl', TTL: '10s' }));
    supervisor.updateTtl('ttl', 'passing', '0123456789');
    expect(state.check('ttl')?.output).toBe('01234567 ... (captured 8 of 10 bytes)');
  });

  it('refuses a TTL update for an unknown check and for a check without a TTL', () => {
    const { state, supervisor } = setup();
    state.addCheck(readCheckDefinition({ Name: 'web', HTTP: 'http://127.0.0.1:1/', Interval: '10s' }));
    expect(agentErrorOf(() => supervisor.updateTtl('nope', 'passing', '')).code).toBe('CHECK_UNKNOWN');
    expect(agentErrorOf(() => supervisor.updateTtl('web', 'passing', '')).message).toBe(
      'CheckID "web" does not have associated TTL',
    );
  });

  it('makes an alias check follow the worst check of the aliased service', () => {
    const { state, supervisor } = setup();
    state.addService(readServiceDefinition({ Name: 'web', Check: { CheckID: 'w', TTL: '1m' } }));
    state.addCheck(readCheckDefinition({ Name: 'alias', AliasService: 'web' }));
    expect(state.check('alias')).toMatchObject({
      status: 'critical',
      output: 'Aliased check "Service \'web\' check" failing: ',
    });
    supervisor.updateTtl('w', 'passing', 'ok');
    expect(state.check('alias')).toMatchObject({ status: 'passing', output: 'All checks passing.' });
    state.removeService('web');
    expect(state.check('alias')).toMatchObject({
      status: 'critical',
      output: 'Service web could not be found on node n1',
    });
  });

  it('deregisters a service whose check stays critical for DeregisterCriticalServiceAfter', () => {
    const { clock, state, supervisor } = setup();
    state.addService(
      readServiceDefinition({ Name: 'web', Check: { CheckID: 'w', TTL: '1m', DeregisterCriticalServiceAfter: '30s' } }),
    );
    clock.advance(29_000);
    supervisor.updateTtl('w', 'passing', '');
    clock.advance(60_000); // the TTL runs out: critical again, the 30 s count starts afresh
    clock.advance(29_999);
    expect(state.service('web')).toBeDefined();
    clock.advance(1);
    expect(state.service('web')).toBeUndefined();
    expect(state.check('w')).toBeUndefined();
  });
});

describe('StatusThreshold', () => {
  it('reports passing after SuccessBeforePassing successes and critical after FailuresBeforeCritical failures', () => {
    const t = new StatusThreshold({ successBeforePassing: 2, failuresBeforeWarning: 0, failuresBeforeCritical: 3 });
    expect(
      ['passing', 'passing', 'critical', 'critical', 'passing', 'critical', 'critical', 'critical'].map((s) =>
        t.next(s as 'passing' | 'critical'),
      ),
    ).toEqual([undefined, 'passing', undefined, undefined, undefined, undefined, undefined, 'critical']);
  });

  it('reports warning at FailuresBeforeWarning before critical', () => {
    const t = new StatusThreshold({ successBeforePassing: 0, failuresBeforeWarning: 1, failuresBeforeCritical: 2 });
    expect([t.next('critical'), t.next('critical')]).toEqual(['warning', 'critical']);
  });
});

describe('TailBuffer', () => {
  it('keeps the last bytes', () => {
    const b = new TailBuffer(4);
    for (const part of ['ab', 'cd', 'ef']) b.push(Buffer.from(part));
    expect(b.text()).toBe('cdef');
  });
});
