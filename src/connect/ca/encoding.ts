// Text forms of certificate material as Consul shows them: PEM blocks, colon-separated hex for
// IDs, key IDs and serials, and RFC 3339 times at whole seconds.
import { createHash } from 'node:crypto';

/** `ab:cd:ef`: lowercase hex pairs joined by colons (root IDs, key IDs, leaf serials). */
export function colonHex(bytes: Uint8Array): string {
  const hex = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
  let out = '';
  for (let i = 0; i < hex.length; i += 2) out += (i === 0 ? '' : ':') + hex.slice(i, i + 2);
  return out;
}

/** A serial as Consul encodes it: colon-hex of its minimal big-endian bytes (8 → "08"). */
export function serialColonHex(serial: bigint): string {
  let hex = serial.toString(16);
  if (hex.length % 2 === 1) hex = `0${hex}`;
  return colonHex(Buffer.from(hex, 'hex'));
}

/** A root's ID: SHA-1 of its DER in colon-hex (as Consul shows it). */
export function certificateId(der: Uint8Array): string {
  return colonHex(createHash('sha1').update(der).digest());
}

/** PEM with 64-column base64 lines and a trailing newline. */
export function toPem(der: Uint8Array, label: string): string {
  const b64 = Buffer.from(der.buffer, der.byteOffset, der.byteLength).toString('base64');
  let body = '';
  for (let i = 0; i < b64.length; i += 64) body += `${b64.slice(i, i + 64)}\n`;
  return `-----BEGIN ${label}-----\n${body}-----END ${label}-----\n`;
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g;

/** Every PEM block of `text` with the given label, decoded, in order. */
export function pemBlocks(text: string, label: string): Buffer[] {
  const out: Buffer[] = [];
  for (const m of text.matchAll(PEM_BLOCK)) {
    if (m[1] === label) out.push(Buffer.from((m[2] as string).replace(/\s+/g, ''), 'base64'));
  }
  return out;
}

/** RFC 3339 UTC at whole seconds, as Go prints a certificate time: 2026-01-01T00:00:00Z. */
export function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** A PEM ending in exactly one newline (Consul adds one when missing). */
export function withTrailingNewline(pem: string): string {
  return pem.endsWith('\n') ? pem : `${pem}\n`;
}
