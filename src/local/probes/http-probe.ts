// Consul's HTTP check: one request (no keep-alive) with the check's method, headers and body,
// redirects followed as Go's client does unless DisableRedirects; 2xx is passing, 429 warning,
// anything else or an error critical. The output is "HTTP <method> <url>: <status line> Output: <body tail>".
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { SecureContext } from 'node:tls';
import { goVerifyText } from '../../core/go-tls-text.js';
import type { ProbeSpec } from '../probe-protocol.js';
import { DEFAULT_PROBE_TIMEOUT_MS, TailBuffer, type ProbeResult } from './output.js';

const USER_AGENT = 'Consul Health Check';
/** Go's http.Client: at most ten redirects, on these statuses. */
const MAX_REDIRECTS = 10;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** `roots`: the agent's CA as a context, the only roots when given (else the system's). */
export function httpProbe(spec: ProbeSpec, roots?: SecureContext): Promise<ProbeResult> {
  const method = spec.method || 'GET';
  const target = spec.target;
  const goOp = method.charAt(0) + method.slice(1).toLowerCase();
  const fail = (detail: string): ProbeResult => ({ status: 'critical', output: `${goOp} "${target}": ${detail}` });
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return Promise.resolve({ status: 'critical', output: `parse "${target}": invalid URL` });
  }
  const headers: Record<string, string | string[]> = {};
  for (const [name, values] of Object.entries(spec.header)) headers[name] = [...values];
  const has = (name: string): boolean => Object.keys(headers).some((h) => h.toLowerCase() === name);
  if (!has('user-agent')) headers['User-Agent'] = USER_AGENT;
  if (!has('accept')) headers['Accept'] = 'text/plain, text/*, */*';
  const timeoutMs = spec.timeoutMs > 0 ? spec.timeoutMs : DEFAULT_PROBE_TIMEOUT_MS;
  return new Promise((resolve) => {
    let settled = false;
    let req: ClientRequest | undefined;
    const done = (result: ProbeResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    // One timer for the whole exchange, redirects included, as Go's http.Client.Timeout.
    const timer = setTimeout(() => {
      done(fail('context deadline exceeded (Client.Timeout exceeded while awaiting headers)'));
      req?.destroy();
    }, timeoutMs);
    const send = (at: URL, hopMethod: string, body: string, hops: number): void => {
      const request = at.protocol === 'https:' ? httpsRequest : httpRequest;
      req = request(
        at,
        {
          method: hopMethod,
          headers,
          agent: false,
          rejectUnauthorized: !spec.tlsSkipVerify,
          ...(roots === undefined ? {} : { secureContext: roots }),
          ...(spec.tlsServerName === '' ? {} : { servername: spec.tlsServerName }),
        },
        (res: IncomingMessage) => {
          const code = res.statusCode ?? 0;
          const location = res.headers.location;
          // Go's client follows redirects unless the check disables them (Consul: http.ErrUseLastResponse).
          if (!spec.disableRedirects && REDIRECTS.has(code) && location !== undefined) {
            res.resume();
            if (hops === MAX_REDIRECTS) return done(fail(`stopped after ${MAX_REDIRECTS} redirects`));
            let next: URL;
            try {
              next = new URL(location, at);
            } catch {
              return done(fail(`failed to parse Location header "${location}"`));
            }
            // 301/302/303 turn into a GET without a body (HEAD stays HEAD); 307/308 resend as they were.
            const keep = code === 307 || code === 308 || hopMethod === 'HEAD';
            return send(next, keep ? hopMethod : 'GET', keep ? body : '', hops + 1);
          }
          const tail = new TailBuffer(spec.outputMaxSize);
          res.on('data', (chunk: Buffer) => tail.push(chunk));
          res.on('error', (err) => done(fail(err.message)));
          res.on('end', () => {
            const line = `HTTP ${method} ${target}: ${code} ${res.statusMessage ?? ''} Output: ${tail.text()}`;
            done({
              status: code >= 200 && code <= 299 ? 'passing' : code === 429 ? 'warning' : 'critical',
              output: line,
            });
          });
        },
      );
      req.on('error', (err) => done(fail(describe(err, at))));
      req.end(body === '' ? undefined : body);
    };
    send(url, method, spec.body, 0);
  });
}

/** Go's dial and certificate error texts for the common cases, else Node's message. */
export function describe(err: NodeJS.ErrnoException, url: URL): string {
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  const addr = `${url.hostname}:${port}`;
  if (err.code === 'ECONNREFUSED') return `dial tcp ${addr}: connect: connection refused`;
  if (err.code === 'ECONNRESET') return 'EOF';
  return goVerifyText(err) ?? err.message;
}
