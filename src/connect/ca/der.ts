// A minimal DER writer and reader: just the ASN.1 the CA needs (certificates, CSRs, their
// extensions). Hand-written instead of pkijs or @peculiar/x509 for speed: their JavaScript object
// model for ASN.1 makes a cold leaf 6-10x slower (bench/micro/leaf-issue.ts measures all three).

/** Universal tags used here. */
export const TAG = {
  BOOLEAN: 0x01,
  INTEGER: 0x02,
  BIT_STRING: 0x03,
  OCTET_STRING: 0x04,
  NULL: 0x05,
  OID: 0x06,
  UTF8_STRING: 0x0c,
  PRINTABLE_STRING: 0x13,
  IA5_STRING: 0x16,
  UTC_TIME: 0x17,
  GENERALIZED_TIME: 0x18,
  SEQUENCE: 0x30,
  SET: 0x31,
} as const;

function lengthBytes(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length]);
  const bytes: number[] = [];
  for (let n = length; n > 0; n = Math.floor(n / 256)) bytes.unshift(n & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

/** One TLV: tag, DER length, content. */
export function tlv(tag: number, content: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from([tag]), lengthBytes(content.length), content]);
}

export const sequence = (...items: readonly Uint8Array[]): Buffer => tlv(TAG.SEQUENCE, Buffer.concat(items));
export const set = (...items: readonly Uint8Array[]): Buffer => tlv(TAG.SET, Buffer.concat(items));
/** `[n] EXPLICIT`: a constructed context tag around one encoded value. */
export const explicit = (n: number, item: Uint8Array): Buffer => tlv(0xa0 | n, item);
/** `[n] IMPLICIT` on a primitive: the content with a context tag. */
export const implicitPrimitive = (n: number, content: Uint8Array): Buffer => tlv(0x80 | n, content);
export const octetString = (content: Uint8Array): Buffer => tlv(TAG.OCTET_STRING, content);
export const NULL = Buffer.from([TAG.NULL, 0x00]);
export const TRUE = Buffer.from([TAG.BOOLEAN, 0x01, 0xff]);

/** A BIT STRING whose content is whole bytes (signatures, keys). */
export const bitString = (content: Uint8Array): Buffer =>
  tlv(TAG.BIT_STRING, Buffer.concat([Buffer.from([0]), content]));

/** A non-negative INTEGER in minimal two's complement. */
export function integer(value: bigint): Buffer {
  if (value < 0n) throw new RangeError('negative INTEGER not supported');
  let hex = value.toString(16);
  if (hex.length % 2 === 1) hex = `0${hex}`;
  let bytes = Buffer.from(hex, 'hex');
  if ((bytes[0] as number) & 0x80) bytes = Buffer.concat([Buffer.from([0]), bytes]);
  return tlv(TAG.INTEGER, bytes);
}

export function oid(dotted: string): Buffer {
  const arcs = dotted.split('.').map((a) => Number(a));
  const first = (arcs[0] as number) * 40 + (arcs[1] as number);
  const out: number[] = [];
  for (const arc of [first, ...arcs.slice(2)]) {
    const chunk: number[] = [arc & 0x7f];
    for (let n = Math.floor(arc / 128); n > 0; n = Math.floor(n / 128)) chunk.unshift(0x80 | (n & 0x7f));
    out.push(...chunk);
  }
  return tlv(TAG.OID, Buffer.from(out));
}

const PRINTABLE = /^[A-Za-z0-9 '()+,\-./:=?]*$/;

/** A directory string as Go writes one: PrintableString when it fits, else UTF8String. */
export const directoryString = (text: string): Buffer =>
  tlv(PRINTABLE.test(text) ? TAG.PRINTABLE_STRING : TAG.UTF8_STRING, Buffer.from(text, 'utf8'));

const pad = (n: number, width: number): string => String(n).padStart(width, '0');

/** RFC 5280 §4.1.2.5: UTCTime through 2049, GeneralizedTime from 2050; whole seconds, Z. */
export function time(ms: number): Buffer {
  const d = new Date(ms);
  const year = d.getUTCFullYear();
  const rest = `${pad(d.getUTCMonth() + 1, 2)}${pad(d.getUTCDate(), 2)}${pad(d.getUTCHours(), 2)}${pad(d.getUTCMinutes(), 2)}${pad(d.getUTCSeconds(), 2)}Z`;
  if (year >= 1950 && year < 2050) return tlv(TAG.UTC_TIME, Buffer.from(`${pad(year % 100, 2)}${rest}`, 'ascii'));
  return tlv(TAG.GENERALIZED_TIME, Buffer.from(`${pad(year, 4)}${rest}`, 'ascii'));
}

/** A decoded TLV: `raw` is the whole encoding, `content` its value bytes (both views, no copy). */
export interface Node {
  readonly tag: number;
  readonly raw: Buffer;
  readonly content: Buffer;
}

export class DerError extends Error {
  override readonly name = 'DerError';
}

/** Reads the TLV at `offset`; throws DerError on truncated or indefinite-length input. */
export function readNode(buf: Buffer, offset = 0): Node {
  if (offset + 2 > buf.length) throw new DerError('truncated DER');
  const tag = buf[offset] as number;
  let length = buf[offset + 1] as number;
  let header = 2;
  if (length & 0x80) {
    const count = length & 0x7f;
    if (count === 0 || count > 4) throw new DerError('unsupported DER length');
    if (offset + 2 + count > buf.length) throw new DerError('truncated DER');
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + (buf[offset + 2 + i] as number);
    header += count;
  }
  const end = offset + header + length;
  if (end > buf.length) throw new DerError('truncated DER');
  return { tag, raw: buf.subarray(offset, end), content: buf.subarray(offset + header, end) };
}

/** The children of a constructed node, in order. */
export function children(node: Node): Node[] {
  const out: Node[] = [];
  for (let offset = 0; offset < node.content.length;) {
    const child = readNode(node.content, offset);
    out.push(child);
    offset += child.raw.length;
  }
  return out;
}

/** Reads exactly one TLV spanning the whole buffer. */
export function readWhole(buf: Buffer): Node {
  const node = readNode(buf, 0);
  if (node.raw.length !== buf.length) throw new DerError('trailing bytes after DER value');
  return node;
}

export function readOid(node: Node): string {
  if (node.tag !== TAG.OID || node.content.length === 0) throw new DerError('expected an OID');
  const bytes = node.content;
  const arcs: number[] = [];
  let value = 0;
  for (const byte of bytes) {
    value = value * 128 + (byte & 0x7f);
    if (!(byte & 0x80)) {
      arcs.push(value);
      value = 0;
    }
  }
  const first = arcs.shift() as number;
  const head = first < 80 ? [Math.floor(first / 40), first % 40] : [2, first - 80];
  return [...head, ...arcs].join('.');
}

export function readInteger(node: Node): bigint {
  if (node.tag !== TAG.INTEGER || node.content.length === 0) throw new DerError('expected an INTEGER');
  if ((node.content[0] as number) & 0x80) throw new DerError('negative INTEGER');
  return BigInt(`0x${node.content.toString('hex')}`);
}

export function readTime(node: Node): number {
  const text = node.content.toString('ascii');
  let m: RegExpExecArray | null;
  if (node.tag === TAG.UTC_TIME && (m = /^(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)Z$/.exec(text))) {
    const yy = Number(m[1]);
    return Date.UTC(
      yy < 50 ? 2000 + yy : 1900 + yy,
      Number(m[2]) - 1,
      Number(m[3]),
      Number(m[4]),
      Number(m[5]),
      Number(m[6]),
    );
  }
  if (node.tag === TAG.GENERALIZED_TIME && (m = /^(\d{4})(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)Z$/.exec(text))) {
    return Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
  }
  throw new DerError('unsupported time encoding');
}
