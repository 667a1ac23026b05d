// The few KV calls a bench makes outside the load generator (seed a key, read its index, check a
// URL answers as expected before loading it), over fetch on loopback.
import type { Method } from './load.js';
import { LOOPBACK } from './ports.js';

export function kvUrl(port: number, key: string, query = ''): string {
  return `http://${LOOPBACK}:${port}/v1/kv/${key}${query}`;
}

export interface Probe {
  status: number;
  bodyBytes: number;
  /** X-Svc-Index, when the server sent one. */
  index: number | undefined;
  body: string;
}

export async function probe(url: string, init: { method?: Method; body?: string | undefined } = {}): Promise<Probe> {
  const response = await fetch(url, { method: init.method ?? 'GET', body: init.body ?? null });
  const body = await response.text();
  const index = response.headers.get('x-svc-index');
  return {
    status: response.status,
    bodyBytes: Buffer.byteLength(body),
    index: index === null ? undefined : Number(index),
    body,
  };
}

/** PUTs `value` at `key` and fails unless the server answers 200 `true`. */
export async function putKey(port: number, key: string, value: string): Promise<void> {
  const result = await probe(kvUrl(port, key), { method: 'PUT', body: value });
  if (result.status !== 200 || result.body.trim() !== 'true') {
    throw new Error(`PUT ${key}: ${result.status} ${result.body.slice(0, 200)}`);
  }
}
