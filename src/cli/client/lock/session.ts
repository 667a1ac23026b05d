// The command's own session (Consul's api/session.go: Create, RenewPeriodic, Destroy): created
// for the lock, renewed every half TTL until it ends, destroyed with the lock.
import { parseDuration } from '../../../core/duration.js';
import type { ApiClient } from '../api.js';
import { StatusError, labelled } from './errors.js';

/** api.DefaultLockSessionTTL and DefaultSemaphoreSessionTTL, as sent and in ms. */
export const SESSION_TTL = '15s';
const SESSION_TTL_MS = 15_000;
/** api.Session.RenewPeriodic: after a failed renew, the next try in a second (until a TTL has passed). */
const RENEW_RETRY_MS = 1_000;

/** The command's session: created with the lock, renewed as api.Session.RenewPeriodic renews it, ended with it. */
export class Session {
  private timer: NodeJS.Timeout | undefined;
  private ended = false;

  private constructor(
    private readonly api: ApiClient,
    readonly id: string,
  ) {}

  static async create(api: ApiClient, body: Readonly<Record<string, string>>): Promise<Session> {
    const answer = await labelled(
      'failed to create session',
      api.call('PUT', '/v1/session/create', JSON.stringify(body)).then((a) => {
        if (a.status !== 200) throw new StatusError(a.status, a.text);
        return a;
      }),
    );
    const session = new Session(api, (JSON.parse(answer.text) as { ID: string }).ID);
    session.schedule(SESSION_TTL_MS / 2, SESSION_TTL_MS, Date.now());
    return session;
  }

  private schedule(inMs: number, ttlMs: number, renewedAt: number): void {
    this.timer = setTimeout(() => void this.renew(ttlMs, renewedAt), inMs);
  }

  private async renew(ttlMs: number, renewedAt: number): Promise<void> {
    try {
      const answer = await this.api.call('PUT', `/v1/session/renew/${this.id}`, '');
      if (this.ended) return;
      // Gone: renewing stops, and the lock's watch sees the lock go.
      if (answer.status === 404) return;
      if (answer.status !== 200) throw new StatusError(answer.status, answer.text);
      const [entry] = JSON.parse(answer.text) as { TTL?: string }[];
      if (entry === undefined) return;
      // The agent may answer with another TTL; renewal follows it.
      const ttl = parseDuration(entry.TTL ?? '') || ttlMs;
      this.schedule(ttl / 2, ttl, Date.now());
    } catch {
      if (this.ended || Date.now() - renewedAt > ttlMs) return;
      this.schedule(RENEW_RETRY_MS, ttlMs, renewedAt);
    }
  }

  /** Stops renewing and destroys the session (a failure is left to its TTL). */
  async end(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.timer);
    await this.api.call('PUT', `/v1/session/destroy/${this.id}`, '').catch(() => undefined);
  }
}
