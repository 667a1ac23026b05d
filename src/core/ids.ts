// Generated identifiers (docs/decisions.md#ids): 128 purely random bits shown as 8-4-4-4-12
// lowercase hex. Like Consul's go-uuid, no RFC 4122 version or variant bits are forced.
import { randomBytes } from 'node:crypto';

export function generateId(): string {
  const hex = randomBytes(16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const UUID_SHAPE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** Consul's check: length 36, dashes at 8/13/18/23, hex elsewhere; the version is not checked. */
export function isUuid(value: string): boolean {
  return UUID_SHAPE.test(value);
}
