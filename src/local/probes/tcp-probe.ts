// Consul's TCP check: a connection opened and closed; "TCP connect <addr>: Success", or the dial error.
import { connect } from 'node:net';
import type { ProbeSpec } from '../probe-protocol.js';
import { DEFAULT_PROBE_TIMEOUT_MS, type ProbeResult } from './output.js';

export function tcpProbe(spec: ProbeSpec): Promise<ProbeResult> {
  const target = spec.target;
  const split = target.lastIndexOf(':');
  const host = target.slice(0, split).replace(/^\[(.*)\]$/, '$1');
  const port = Number(target.slice(split + 1));
  if (split < 0 || !Number.isInteger(port) || port <= 0 || port > 65535) {
    return Promise.resolve({ status: 'critical', output: `dial tcp ${target}: address ${target}: invalid port` });
  }
  const timeoutMs = spec.timeoutMs > 0 ? spec.timeoutMs : DEFAULT_PROBE_TIMEOUT_MS;
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (result: ProbeResult): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => done({ status: 'critical', output: `dial tcp ${target}: i/o timeout` }), timeoutMs);
    socket.once('connect', () => done({ status: 'passing', output: `TCP connect ${target}: Success` }));
    socket.once('error', (err: NodeJS.ErrnoException) =>
      done({
        status: 'critical',
        output:
          err.code === 'ECONNREFUSED'
            ? `dial tcp ${target}: connect: connection refused`
            : `dial tcp ${target}: ${err.message}`,
      }),
    );
  });
}
