// Consul's HTTP check: one request (no keep-alive) with the check's method, headers and body;
// 2xx is passing, 429 warning, anything else or an error critical. The output is
// "HTTP <method> <url>: <status line> Output: <body tail>".
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { ProbeSpec } from '../probe-protocol.js';
import { DEFAULT_PROBE_TIMEOUT_MS, TailBuffer, type ProbeResult } from './output.js';

const USER_AGENT = 'Consul Health Check';

export function httpProbe(spec: ProbeSpec): Promise<ProbeResult> {
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
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve) => {
    let settled = false;
    const done = (result: ProbeResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const req = send(
      url,
      {
        method,
        headers,
        agent: false,
        rejectUnauthorized: !spec.tlsSkipVerify,
        ...(spec.tlsServerName === '' ? {} : { servername: spec.tlsServerName }),
      },
      (res: IncomingMessage) => {
        const body = new TailBuffer(spec.outputMaxSize);
        res.on('data', (chunk: Buffer) => body.push(chunk));
        res.on('error', (err) => done(fail(err.message)));
        res.on('end', () => {
          const code = res.statusCode ?? 0;
          const line = `HTTP ${method} ${target}: ${code} ${res.statusMessage ?? ''} Output: ${body.text()}`;
          done({
            status: code >= 200 && code <= 299 ? 'passing' : code === 429 ? 'warning' : 'critical',
            output: line,
          });
        });
      },
    );
    // One timer for the whole exchange, as Go's http.Client.Timeout.
    const timer = setTimeout(() => {
      done(fail('context deadline exceeded (Client.Timeout exceeded while awaiting headers)'));
      req.destroy();
    }, timeoutMs);
    req.on('error', (err) => done(fail(describe(err, url))));
    req.end(spec.body === '' ? undefined : spec.body);
  });
}

/** Go's dial error text for the common cases, else Node's message. */
export function describe(err: NodeJS.ErrnoException, url: URL): string {
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  const addr = `${url.hostname}:${port}`;
  if (err.code === 'ECONNREFUSED') return `dial tcp ${addr}: connect: connection refused`;
  if (err.code === 'ECONNRESET') return 'EOF';
  return err.message;
}
