// One contender for a lock, as a user's program takes one through an agent's HTTP API (Consul's
// api.Lock in small): a session with a TTL renewed every third of it, acquire, a blocking read of
// the key while another holds it, hold briefly, release, again. Run by test/cluster/lock-faults.test.ts
// as its own process (so that it can be frozen); prints one JSON line per event:
// {"event":"session"|"acquired"|"releasing"|"released"|"session-gone"|"error", "session", "t", ...}.
// Node's fetch only.
const [url, key, ttl = '10s'] = process.argv.slice(2);
const say = (event, fields = {}) => process.stdout.write(`${JSON.stringify({ event, t: Date.now(), ...fields })}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function call(method, path, body) {
  const res = await fetch(`${url}${path}`, { method, body, signal: AbortSignal.timeout(15_000) });
  return { status: res.status, text: await res.text(), index: res.headers.get('X-Svc-Index') };
}

let session;
let renewing;

async function newSession() {
  clearInterval(renewing);
  const res = await call('PUT', '/v1/session/create', JSON.stringify({ TTL: ttl, LockDelay: '1s' }));
  if (res.status !== 200) throw new Error(`create: ${res.status} ${res.text}`);
  session = JSON.parse(res.text).ID;
  say('session', { session });
  const every = (Number.parseInt(ttl, 10) * 1000) / 3;
  const mine = session;
  renewing = setInterval(() => {
    call('PUT', `/v1/session/renew/${mine}`).catch(() => undefined);
  }, every);
}

for (;;) {
  try {
    if (session === undefined) await newSession();
    const taken = await call('PUT', `/v1/kv/${key}?acquire=${session}`, session);
    if (taken.status === 400 && taken.text.startsWith('Invalid session')) {
      say('session-gone', { session });
      session = undefined;
      continue;
    }
    if (taken.status !== 200) throw new Error(`acquire: ${taken.status} ${taken.text}`);
    if (taken.text !== 'true') {
      // Held by another (or its lock-delay runs): wait until the key changes.
      const now = await call('GET', `/v1/kv/${key}`);
      const held = now.status === 200 && JSON.parse(now.text)[0].Session !== undefined;
      if (held) await call('GET', `/v1/kv/${key}?index=${now.index}&wait=5s`);
      else await sleep(200);
      continue;
    }
    say('acquired', { session });
    await sleep(100 + Math.floor(Math.random() * 300));
    say('releasing', { session });
    const released = await call('PUT', `/v1/kv/${key}?release=${session}`, 'free');
    say('released', { session, ok: released.text === 'true', status: released.status });
  } catch (err) {
    say('error', { session, message: String(err?.message ?? err) });
    await sleep(500);
  }
}
