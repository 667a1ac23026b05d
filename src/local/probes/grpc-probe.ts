// Consul's gRPC check: grpc.health.v1.Health/Check over HTTP/2 (node:http2, no gRPC library),
// passing when the answer is SERVING. The target is `host:port` or `host:port/service`.
import { connect, constants } from 'node:http2';
import type { SecureContext } from 'node:tls';
import { goVerifyText } from '../../core/go-tls-text.js';
import type { ProbeSpec } from '../probe-protocol.js';
import { DEFAULT_PROBE_TIMEOUT_MS, type ProbeResult } from './output.js';

const SERVING_STATUS = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'];

/** `roots`: the agent's CA as a context, the only roots when given (else the system's). */
export function grpcProbe(spec: ProbeSpec, roots?: SecureContext): Promise<ProbeResult> {
  const target = spec.target;
  const slash = target.indexOf('/');
  const server = slash < 0 ? target : target.slice(0, slash);
  const service = slash < 0 ? '' : target.slice(slash + 1);
  const timeoutMs = spec.timeoutMs > 0 ? spec.timeoutMs : DEFAULT_PROBE_TIMEOUT_MS;
  const authority = `${spec.useTls ? 'https' : 'http'}://${server}`;
  return new Promise((resolve) => {
    let settled = false;
    const session = connect(authority, {
      rejectUnauthorized: !spec.tlsSkipVerify,
      ...(roots === undefined ? {} : { secureContext: roots }),
      ...(spec.tlsServerName === '' ? {} : { servername: spec.tlsServerName }),
    });
    const done = (result: ProbeResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      session.destroy();
      resolve(result);
    };
    const fail = (detail: string): void => done({ status: 'critical', output: detail });
    const timer = setTimeout(
      () => fail('rpc error: code = DeadlineExceeded desc = context deadline exceeded'),
      timeoutMs,
    );
    session.on('error', (err: NodeJS.ErrnoException) => fail(unavailable(err, server)));
    const stream = session.request({
      [constants.HTTP2_HEADER_METHOD]: 'POST',
      [constants.HTTP2_HEADER_PATH]: '/grpc.health.v1.Health/Check',
      [constants.HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc',
      te: 'trailers',
    });
    const chunks: Buffer[] = [];
    let grpcStatus: string | undefined;
    let grpcMessage = '';
    const readStatus = (headers: Record<string, unknown>): void => {
      if (headers['grpc-status'] !== undefined) grpcStatus = String(headers['grpc-status']);
      if (headers['grpc-message'] !== undefined) grpcMessage = decodeURIComponent(String(headers['grpc-message']));
    };
    stream.on('response', readStatus);
    stream.on('trailers', readStatus);
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('error', (err: NodeJS.ErrnoException) => fail(unavailable(err, server)));
    stream.on('end', () => {
      if (grpcStatus !== undefined && grpcStatus !== '0') {
        fail(`rpc error: code = ${grpcCodeName(grpcStatus)} desc = ${grpcMessage}`);
        return;
      }
      const status = servingStatus(Buffer.concat(chunks));
      if (status === 1) done({ status: 'passing', output: `gRPC check ${target}: success` });
      else fail(`gRPC ${target} serving status: ${SERVING_STATUS[status] ?? String(status)}`);
    });
    stream.end(healthCheckRequest(service));
  });
}

/**
 * grpc-go's text for a connection that failed, as Consul's gRPC check reports it: a refused dial
 * and a certificate that failed verification in Go's words, any other failure in Node's.
 */
function unavailable(failure: NodeJS.ErrnoException, server: string): string {
  // A stream that never opened fails first, with the session's error as its cause.
  const err = failure.cause instanceof Error ? (failure.cause as NodeJS.ErrnoException) : failure;
  const verify = goVerifyText(err);
  const cause =
    err.code === 'ECONNREFUSED'
      ? `transport: Error while dialing: dial tcp ${server}: connect: connection refused`
      : verify === undefined
        ? undefined
        : `transport: authentication handshake failed: ${verify}`;
  const desc = cause === undefined ? err.message : `connection error: desc = ${JSON.stringify(cause)}`;
  return `rpc error: code = Unavailable desc = ${desc}`;
}

/** A length-prefixed gRPC message holding HealthCheckRequest{service}. */
function healthCheckRequest(service: string): Buffer {
  const name = Buffer.from(service);
  const body = name.length === 0 ? Buffer.alloc(0) : Buffer.concat([Buffer.from([0x0a]), varint(name.length), name]);
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(body.length, 1);
  return Buffer.concat([prefix, body]);
}

/** HealthCheckResponse.status (field 1, varint) from a length-prefixed message; 0 when absent. */
function servingStatus(frame: Buffer): number {
  const body = frame.subarray(5);
  let i = 0;
  while (i < body.length) {
    const tag = body[i++] as number;
    if (tag === 0x08) return readVarint(body, i);
    if ((tag & 7) === 0) while (i < body.length && ((body[i++] as number) & 0x80) !== 0);
    else if ((tag & 7) === 2) i += readVarint(body, i) + 1;
    else return 0;
  }
  return 0;
}

function varint(n: number): Buffer {
  const bytes: number[] = [];
  while (n > 0x7f) {
    bytes.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  bytes.push(n);
  return Buffer.from(bytes);
}

function readVarint(buf: Buffer, at: number): number {
  let n = 0;
  let shift = 0;
  for (let i = at; i < buf.length; i++) {
    const b = buf[i] as number;
    n |= (b & 0x7f) << shift;
    if ((b & 0x80) === 0) break;
    shift += 7;
  }
  return n;
}

const GRPC_CODES = [
  'OK',
  'Canceled',
  'Unknown',
  'InvalidArgument',
  'DeadlineExceeded',
  'NotFound',
  'AlreadyExists',
  'PermissionDenied',
  'ResourceExhausted',
  'FailedPrecondition',
  'Aborted',
  'OutOfRange',
  'Unimplemented',
  'Internal',
  'Unavailable',
  'DataLoss',
  'Unauthenticated',
];

function grpcCodeName(code: string): string {
  return GRPC_CODES[Number(code)] ?? `Code(${code})`;
}
