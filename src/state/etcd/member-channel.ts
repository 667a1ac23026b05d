// One gRPC channel per etcd member, shared by every service client of that member (so one TCP
// connection), which can be dropped for a new one. grpc-js gives a connection attempt no deadline:
// a SYN sent while the member was cut off waits out the kernel's retransmissions (1, 3, 7, 15, 31,
// 63 s after the first, then failure at 127 s) even once the link is back, and data sent on a
// connection into a partition waits likewise; without a new channel an agent could leave a healed
// member unused for a minute. The channel's subchannel is its own (grpc.use_local_subchannel_pool)
// so that a new channel is a new connection, not the pooled one still waiting.

/** grpc-js's Channel, as much of it as is used here. */
interface GrpcChannel {
  getConnectivityState(tryToConnect: boolean): number;
  close(): void;
}

/** grpc-js's ConnectivityState.CONNECTING. */
const CONNECTING = 1;

interface ServiceClient {
  getChannel(): GrpcChannel;
}

/** The parts of etcd3's per-member Host (internal to etcd3 1.1.2, pinned in package.json) used here. */
export interface ChannelHost {
  channelOptions: Record<string, unknown>;
  cachedServices: Record<string, ServiceClient | undefined>;
  closed: boolean;
  getServiceClient(name: string): unknown;
  resetAllServices(): void;
  close(): void;
}

export interface MemberChannel {
  /** Whether a connection attempt is under way (neither up nor failed). */
  connecting(): boolean;
  /**
   * Drops the channel (and any call still on it): the next call opens a new connection. Only while
   * connecting: grpc-js lets the closed channel's attempt go then, where a channel closed while
   * waiting out its backoff after a failed attempt could reconnect later with no one to close it.
   */
  reconnect(): void;
}

/**
 * Makes every service client of `host` share one channel of its own, kept open through errors
 * (etcd3 would close a member's clients after any retryable error, leaving streams open on the old
 * connection beside the new one) and closed with the host.
 */
export function shareOneChannel(host: ChannelHost, channelOptions: Record<string, unknown>): MemberChannel {
  const open = host.getServiceClient.bind(host);
  const current = (): GrpcChannel | undefined => Object.values(host.cachedServices).find(Boolean)?.getChannel();
  const options = { ...channelOptions, 'grpc.use_local_subchannel_pool': 1 };
  host.getServiceClient = (name) => {
    const cached = host.cachedServices[name];
    if (cached !== undefined) return cached;
    const channel = current();
    host.channelOptions = channel === undefined ? options : { ...options, channelOverride: channel };
    return open(name);
  };
  const drop = (): void => {
    const channel = current();
    host.cachedServices = Object.create(null) as ChannelHost['cachedServices'];
    channel?.close();
  };
  host.resetAllServices = () => {};
  host.close = () => {
    drop();
    host.closed = true;
  };
  return {
    connecting: () => current()?.getConnectivityState(false) === CONNECTING,
    reconnect: drop,
  };
}
