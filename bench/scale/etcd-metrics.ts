// What one etcd endpoint says of its load on /metrics (Prometheus text), read as the scale figures
// need it: its process's CPU and memory, live watchers and watch streams, leases kept alive, events
// sent to watchers, and gRPC calls by method. Metric names are etcd 3.4's.
export interface EtcdSample {
  /** Wall-clock ms when read. */
  readonly at: number;
  readonly cpuSeconds: number;
  readonly rssBytes: number;
  /** Live watchers (one per watched range per stream) and watch streams. */
  readonly watchers: number;
  readonly watchStreams: number;
  /** Events sent to watchers, all time. */
  readonly eventsSent: number;
  readonly leasesGranted: number;
  readonly leasesRevoked: number;
  /** Keep-alive renewals, all time. */
  readonly leasesRenewed: number;
  /** Messages received on LeaseKeepAlive streams, all time. */
  readonly keepAliveMessages: number;
  /** Maintenance Status calls handled (the agents' leadership probes), all time. */
  readonly statusCalls: number;
  /** Unary calls handled of Range, Txn and Put, all time. */
  readonly rangeCalls: number;
  readonly txnCalls: number;
  readonly putCalls: number;
  readonly dbBytes: number;
}

export async function sampleEtcd(clientUrl: string): Promise<EtcdSample> {
  const text = await (await fetch(`${clientUrl}/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
  const m = parseMetrics(text);
  const grpc = (name: string, method: string): number => m.sum(name, `grpc_method="${method}"`);
  return {
    at: performance.timeOrigin + performance.now(),
    cpuSeconds: m.sum('process_cpu_seconds_total'),
    rssBytes: m.sum('process_resident_memory_bytes'),
    watchers: m.sum('etcd_debugging_mvcc_watcher_total'),
    watchStreams: m.sum('etcd_debugging_mvcc_watch_stream_total'),
    eventsSent: m.sum('etcd_debugging_mvcc_events_total'),
    leasesGranted: m.sum('etcd_debugging_lease_granted_total'),
    leasesRevoked: m.sum('etcd_debugging_lease_revoked_total'),
    leasesRenewed: m.sum('etcd_debugging_lease_renewed_total'),
    keepAliveMessages: grpc('grpc_server_msg_received_total', 'LeaseKeepAlive'),
    statusCalls: grpc('grpc_server_handled_total', 'Status'),
    rangeCalls: grpc('grpc_server_handled_total', 'Range'),
    txnCalls: grpc('grpc_server_handled_total', 'Txn'),
    putCalls: grpc('grpc_server_handled_total', 'Put'),
    dbBytes: m.sum('etcd_mvcc_db_total_size_in_bytes'),
  };
}

/** Per-second rates between two samples, and the gauges of the later one. */
export interface EtcdRates {
  readonly seconds: number;
  readonly cpuPerSecond: number;
  readonly rssBytes: number;
  readonly watchers: number;
  readonly watchStreams: number;
  readonly eventsPerSecond: number;
  readonly keepAlivesPerSecond: number;
  readonly statusPerSecond: number;
  readonly rangePerSecond: number;
  readonly txnPerSecond: number;
  readonly dbBytes: number;
}

export function ratesBetween(a: EtcdSample, b: EtcdSample): EtcdRates {
  const seconds = (b.at - a.at) / 1000;
  const rate = (pick: (s: EtcdSample) => number): number => (pick(b) - pick(a)) / seconds;
  return {
    seconds,
    cpuPerSecond: rate((s) => s.cpuSeconds),
    rssBytes: b.rssBytes,
    watchers: b.watchers,
    watchStreams: b.watchStreams,
    eventsPerSecond: rate((s) => s.eventsSent),
    keepAlivesPerSecond: rate((s) => s.keepAliveMessages),
    statusPerSecond: rate((s) => s.statusCalls),
    rangePerSecond: rate((s) => s.rangeCalls),
    txnPerSecond: rate((s) => s.txnCalls),
    dbBytes: b.dbBytes,
  };
}

/** Sums of samples by metric name, optionally only those whose labels hold a substring. */
function parseMetrics(text: string): { sum(name: string, label?: string): number } {
  const lines = text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
  return {
    sum(name, label) {
      let total = 0;
      for (const line of lines) {
        const brace = line.indexOf('{');
        const space = line.lastIndexOf(' ');
        const metric = brace >= 0 && brace < space ? line.slice(0, brace) : line.slice(0, space);
        if (metric !== name) continue;
        if (label !== undefined && !line.slice(0, space).includes(label)) continue;
        total += Number(line.slice(space + 1));
      }
      return total;
    },
  };
}
