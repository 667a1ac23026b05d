// `connect proxy -register`: the proxy puts itself in the catalog as a connect-proxy service, as
// Consul's built-in proxy does (its RegisterMonitor): ID `<service>-proxy` (`-<register-id>`
// appended when given), name `<service>-proxy`, at the public listener's address and port, with a
// 30 s TTL check the proxy passes three times a period; every 30 s the registration is looked at
// and made again if it is gone or moved (an agent restarted without it), and on stop it is removed.
import { AgentClient, type AgentAddress } from '../sdk/agent-client.js';
import type { SdkLogger } from '../sdk/service.js';

/** The TTL of the heartbeat check; it is passed every third of it. */
export const HEARTBEAT_TTL_MS = 30_000;
/** How often the registration is compared with the agent's. */
const RECONCILE_MS = 30_000;
/** Tries of the deregistration at stop, this far apart. */
const DEREGISTER_TRIES = 3;
const DEREGISTER_PAUSE_MS = 500;

export interface SelfRegistrationOptions {
  /** The service the proxy fronts (its leaf's). */
  readonly service: string;
  /** The public listener's address and port. */
  readonly address: string;
  readonly port: number;
  /** -register-id: told apart from the service's other proxies. */
  readonly idSuffix?: string | undefined;
}

export class SelfRegistration {
  readonly serviceId: string;
  readonly checkId: string;
  private readonly client: AgentClient;
  private readonly timers: NodeJS.Timeout[] = [];

  constructor(
    private readonly self: SelfRegistrationOptions,
    agent: AgentAddress,
    private readonly log: SdkLogger,
  ) {
    this.serviceId = `${self.service}-proxy${self.idSuffix ? `-${self.idSuffix}` : ''}`;
    this.checkId = `${this.serviceId}-ttl`;
    this.client = new AgentClient(agent);
  }

  /** Registers (a failure is logged and tried again at the next reconcile) and keeps the check passing. */
  async start(): Promise<void> {
    await this.reconcile();
    const every = (ms: number, run: () => Promise<void>): void => {
      const timer = setInterval(() => void run(), ms);
      timer.unref();
      this.timers.push(timer);
    };
    every(HEARTBEAT_TTL_MS / 3, () => this.heartbeat());
    every(RECONCILE_MS, () => this.reconcile());
  }

  /** Stops the heartbeat and removes the registration. */
  async close(): Promise<void> {
    for (const timer of this.timers.splice(0)) clearInterval(timer);
    for (let attempt = 1; attempt <= DEREGISTER_TRIES; attempt++) {
      const failure = await this.send('PUT', `/v1/agent/service/deregister/${encodeURIComponent(this.serviceId)}`);
      if (failure === undefined) break;
      this.log.warn({ service: this.serviceId, err: failure, attempt }, 'proxy deregistration failed');
      if (attempt < DEREGISTER_TRIES) await new Promise((resolve) => setTimeout(resolve, DEREGISTER_PAUSE_MS));
    }
    this.client.close();
  }

  private async reconcile(): Promise<void> {
    const current = await this.client
      .call('GET', `/v1/agent/service/${encodeURIComponent(this.serviceId)}`)
      .catch(() => undefined);
    if (current?.status === 200) {
      const held = JSON.parse(current.body) as { Address?: string; Port?: number };
      if (held.Address === this.self.address && held.Port === this.self.port) return;
    }
    const failure = await this.send('PUT', '/v1/agent/service/register', {
      Kind: 'connect-proxy',
      ID: this.serviceId,
      Name: `${this.self.service}-proxy`,
      Address: this.self.address,
      Port: this.self.port,
      Proxy: { DestinationServiceName: this.self.service },
      Check: {
        CheckID: this.checkId,
        Name: 'proxy heartbeat',
        TTL: `${HEARTBEAT_TTL_MS / 1000}s`,
        Notes: 'Built-in proxy will heartbeat this check.',
        Status: 'passing',
      },
    });
    if (failure === undefined) this.log.info({ service: this.serviceId }, 'registered the proxy');
    else this.log.warn({ service: this.serviceId, err: failure }, 'proxy registration failed; tried again shortly');
  }

  private async heartbeat(): Promise<void> {
    const res = await this.client
      .call('PUT', `/v1/agent/check/pass/${encodeURIComponent(this.checkId)}`)
      .catch((err: unknown) => (err instanceof Error ? err.message : String(err)));
    if (typeof res !== 'string' && res.status === 200) return;
    // The agent lost the check (restarted without it): register again now, not at the next reconcile.
    if (typeof res !== 'string' && res.status === 404) return this.reconcile();
    this.log.warn(
      { check: this.checkId, err: typeof res === 'string' ? res : `${res.status} ${res.body.trim()}` },
      'proxy heartbeat failed',
    );
  }

  /** One call; what went wrong, or undefined when the agent answered 200. */
  private async send(method: string, path: string, body?: unknown): Promise<string | undefined> {
    try {
      const res = await this.client.call(method, path, body);
      return res.status === 200 ? undefined : `${res.status} ${res.body.trim()}`;
    } catch (err) {
      return err instanceof Error ? err.message : String(err);
    }
  }
}
