// When a leaf is renewed: a pure function of now, the certificate's validity and a random source
// (Consul's calculateSoftExpiry). The window runs from 60 % to 90 % of the lifetime; a leaf already
// past 60 % renews between now and 90 %, one past 90 % (or living under 10 minutes) at once.

/** Below this lifetime a renewal window makes no sense: renew at once. */
const MIN_WINDOWED_LIFETIME_MS = 10 * 60_000;

export interface Validity {
  readonly validAfter: number;
  readonly validBefore: number;
}

/** The [earliest, latest] renewal time, both epoch ms. */
export function renewalWindow(nowMs: number, cert: Validity): readonly [number, number] {
  const lifetime = cert.validBefore - cert.validAfter;
  if (lifetime < MIN_WINDOWED_LIFETIME_MS) return [nowMs, nowMs];
  const latest = cert.validAfter + Math.floor(lifetime * 0.9);
  if (nowMs >= latest) return [nowMs, nowMs];
  return [Math.max(nowMs, cert.validAfter + Math.floor(lifetime * 0.6)), latest];
}

/** A uniformly random time within the renewal window. */
export function renewalTime(nowMs: number, cert: Validity, random: () => number): number {
  const [earliest, latest] = renewalWindow(nowMs, cert);
  return earliest + Math.floor(random() * (latest - earliest));
}
