// SPIFFE IDs of the mesh (docs/decisions.md#spiffe-ids): a certificate's URI SAN parsed into the
// identity it names, and a service's URI rendered. Pure. The parser runs on every authorize call,
// so the usual `spiffe://<td>/ns/<ns>/dc/<dc>/svc/<name>` takes a hand-written path with no regex
// and no URL object; the rest goes through the general rules. Guarded by bench/micro/authorize.ts.

export type SpiffeId =
  | {
      readonly kind: 'service';
      readonly host: string;
      readonly partition: string;
      readonly namespace: string;
      readonly datacenter: string;
      readonly service: string;
    }
  | {
      readonly kind: 'agent';
      readonly host: string;
      readonly partition: string;
      readonly datacenter: string;
      readonly node: string;
    }
  | { readonly kind: 'mesh-gateway'; readonly host: string; readonly partition: string; readonly datacenter: string }
  | { readonly kind: 'server'; readonly host: string; readonly datacenter: string }
  | { readonly kind: 'signing'; readonly host: string; readonly clusterId: string; readonly domain: string };

export type SpiffeService = Extract<SpiffeId, { kind: 'service' }>;

/** Why a URI is not a SPIFFE ID; the caller words the HTTP error (`… not a valid Connect identifier`). */
export type SpiffeParseResult =
  { readonly ok: true; readonly id: SpiffeId } | { readonly ok: false; readonly reason: string };

const PREFIX = 'spiffe://';
const DEFAULT_PARTITION = 'default';

/** Parses a SPIFFE URI as Consul's connect.ParseCertURI does (scheme, then path shapes in order). */
export function parseSpiffeId(uri: string): SpiffeParseResult {
  const service = plainService(uri);
  if (service !== undefined) return { ok: true, id: service };
  // Other plain shapes: lower-case scheme, no escapes, no query or fragment, no user info.
  if (uri.startsWith(PREFIX) && !hasSpecial(uri)) {
    const slash = uri.indexOf('/', PREFIX.length);
    const host = slash === -1 ? uri.slice(PREFIX.length) : uri.slice(PREFIX.length, slash);
    if (validHost(host)) return matchPath(uri, host, slash === -1 ? '' : uri.slice(slash));
  }
  return parseGeneral(uri);
}

// The usual service URI with no character that needs the general rules: none of hasSpecial's, a
// host of validHost's characters but '%', every segment set. One regular expression (native code,
// a few instructions a character, where a JavaScript loop over the characters costs ~40).
const PLAIN_SEGMENT = '([^/%?#@\\x00-\\x20\\x7f-\\uffff]+)';
const PLAIN_SERVICE = new RegExp(
  `^spiffe://([A-Za-z0-9\\-._~!$&'()*+,;=:[\\]]*)/ns/${PLAIN_SEGMENT}/dc/${PLAIN_SEGMENT}/svc/${PLAIN_SEGMENT}$`,
);

/** `spiffe://<host>/ns/<ns>/dc/<dc>/svc/<name>` when PLAIN_SERVICE matches; undefined for anything else. */
function plainService(uri: string): SpiffeService | undefined {
  const m = PLAIN_SERVICE.exec(uri);
  if (m === null) return undefined;
  return {
    kind: 'service',
    host: m[1] as string,
    partition: DEFAULT_PARTITION,
    namespace: m[2] as string,
    datacenter: m[3] as string,
    service: m[4] as string,
  };
}

/** Characters that send a URI down the general path: escapes, query, fragment, user info, controls. */
function hasSpecial(uri: string): boolean {
  for (let i = PREFIX.length; i < uri.length; i++) {
    const c = uri.charCodeAt(i);
    // % ? # @ space, controls, DEL and anything non-ASCII
    if (c === 37 || c === 63 || c === 35 || c === 64 || c <= 32 || c >= 127) return true;
  }
  return false;
}

// Go's url.Parse accepts these in a host (letters, digits, sub-delims, ':' for a port, '[' ']'
// for IPv6 literals, '%' for zone escapes).
const HOST_CHARS = /^[A-Za-z0-9\-._~!$&'()*+,;=:[\]%]*$/;

function validHost(host: string): boolean {
  return HOST_CHARS.test(host);
}

const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):/;

/** The rare shapes: upper-case scheme, user info, escapes, query or fragment, opaque URIs. */
function parseGeneral(uri: string): SpiffeParseResult {
  for (let i = 0; i < uri.length; i++) {
    const c = uri.charCodeAt(i);
    if (c < 32 || c === 127) return fail('net/url: invalid control character in URL');
  }
  const scheme = SCHEME.exec(uri);
  if (scheme === null || (scheme[1] as string).toLowerCase() !== 'spiffe')
    return fail("SPIFFE ID must have 'spiffe' scheme");
  let rest = uri.slice((scheme[0] as string).length);
  const hash = rest.indexOf('#');
  if (hash !== -1) rest = rest.slice(0, hash);
  const question = rest.indexOf('?');
  if (question !== -1) rest = rest.slice(0, question);
  // An opaque URI (`spiffe:x`) has neither host nor path: it matches no shape.
  if (!rest.startsWith('//')) return notExpected(uri);
  rest = rest.slice(2);
  const slash = rest.indexOf('/');
  let authority = slash === -1 ? rest : rest.slice(0, slash);
  const path = slash === -1 ? '' : rest.slice(slash);
  const at = authority.lastIndexOf('@');
  if (at !== -1) authority = authority.slice(at + 1);
  if (!validHost(authority) || !validEscapes(authority)) return fail(`invalid host ${JSON.stringify(authority)}`);
  if (!validEscapes(path)) return fail(`invalid URL escape in ${JSON.stringify(path)}`);
  return matchPath(uri, authority, path);
}

const SERVICE_PATH = /^(?:\/ap\/([^/]+))?\/ns\/([^/]+)\/dc\/([^/]+)\/svc\/([^/]+)$/;
const AGENT_PATH = /^(?:\/ap\/([^/]+))?\/agent\/client\/dc\/([^/]+)\/id\/([^/]+)$/;
const MESH_GATEWAY_PATH = /^(?:\/ap\/([^/]+))?\/gateway\/mesh\/dc\/([^/]+)$/;
const SERVER_PATH = /^\/agent\/server\/dc\/([^/]+)$/;

/** Matches the still-escaped path against the shapes in Consul's order, unescaping each segment. */
function matchPath(uri: string, host: string, path: string): SpiffeParseResult {
  let m = SERVICE_PATH.exec(path);
  if (m !== null) {
    const [partition, namespace, datacenter, service] = unescapeAll(m, 4);
    if (partition === undefined || namespace === undefined || datacenter === undefined || service === undefined)
      return badSegment(m);
    return {
      ok: true,
      id: { kind: 'service', host, partition: partition || DEFAULT_PARTITION, namespace, datacenter, service },
    };
  }
  m = AGENT_PATH.exec(path);
  if (m !== null) {
    const [partition, datacenter, node] = unescapeAll(m, 3);
    if (partition === undefined || datacenter === undefined || node === undefined) return badSegment(m);
    return { ok: true, id: { kind: 'agent', host, partition: partition || DEFAULT_PARTITION, datacenter, node } };
  }
  m = MESH_GATEWAY_PATH.exec(path);
  if (m !== null) {
    const [partition, datacenter] = unescapeAll(m, 2);
    if (partition === undefined || datacenter === undefined) return badSegment(m);
    return { ok: true, id: { kind: 'mesh-gateway', host, partition: partition || DEFAULT_PARTITION, datacenter } };
  }
  m = SERVER_PATH.exec(path);
  if (m !== null) {
    const datacenter = unescape(m[1] as string);
    if (datacenter === undefined) return badSegment(m);
    return { ok: true, id: { kind: 'server', host, datacenter } };
  }
  const dot = host.indexOf('.');
  if (path === '' && dot > 0) {
    return { ok: true, id: { kind: 'signing', host, clusterId: host.slice(0, dot), domain: host.slice(dot + 1) } };
  }
  return notExpected(uri);
}

/** Unescaped captures 1..n; an absent optional capture is '' and a bad escape is undefined. */
function unescapeAll(m: RegExpExecArray, n: number): (string | undefined)[] {
  const out: (string | undefined)[] = [];
  for (let i = 1; i <= n; i++) {
    const raw = m[i];
    out.push(raw === undefined ? '' : unescape(raw));
  }
  return out;
}

function unescape(segment: string): string | undefined {
  if (!segment.includes('%')) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

function validEscapes(s: string): boolean {
  for (let i = s.indexOf('%'); i !== -1; i = s.indexOf('%', i + 1)) {
    if (!isHex(s.charCodeAt(i + 1)) || !isHex(s.charCodeAt(i + 2))) return false;
  }
  return true;
}

function isHex(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);
}

function fail(reason: string): SpiffeParseResult {
  return { ok: false, reason };
}

function notExpected(uri: string): SpiffeParseResult {
  return fail(`SPIFFE ID is not in the expected format: ${uri}`);
}

function badSegment(m: RegExpExecArray): SpiffeParseResult {
  return fail(`invalid escape in SPIFFE ID path: ${m[0]}`);
}

export interface ServiceUriParts {
  readonly trustDomain: string;
  readonly partition?: string;
  readonly namespace: string;
  readonly datacenter: string;
  readonly service: string;
}

/** `spiffe://<td>/ns/<ns>/dc/<dc>/svc/<name>`, with `/ap/<partition>` first when it is not default. */
export function formatServiceUri(parts: ServiceUriParts): string {
  const ap =
    parts.partition !== undefined && parts.partition !== '' && parts.partition !== DEFAULT_PARTITION
      ? `/ap/${escapePathSegment(parts.partition)}`
      : '';
  const ns = parts.namespace === '' ? 'default' : parts.namespace;
  return `${PREFIX}${parts.trustDomain}${ap}/ns/${escapePathSegment(ns)}/dc/${escapePathSegment(parts.datacenter)}/svc/${escapePathSegment(parts.service)}`;
}

// Go's url.PathEscape keeps unreserved characters and these sub-delims; everything else is %XX.
const PATH_SAFE = /^[A-Za-z0-9\-._~!$&'()*+,;=:@]*$/;

function escapePathSegment(segment: string): string {
  if (PATH_SAFE.test(segment)) return segment;
  let out = '';
  for (const byte of Buffer.from(segment, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += byte < 128 && PATH_SAFE.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}
