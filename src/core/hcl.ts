// The one import of the HCL parser (@cdktf/hcl2json: HashiCorp's HCL library compiled to wasm),
// for ACL rules and config files. Loaded lazily on the first HCL text: booting its Go runtime takes ~0.1-0.25 s and ~55-75 MB of
// RSS, a price an agent whose policies are all JSON (or that never writes one) should not pay.
// Loading it also sets globalThis.Go, globalThis.fs and globalThis.require (its wasm_exec shim).

import { oneItemPerLine } from './hcl1-items.js';

interface Hcl2Json {
  parse(filename: string, contents: string): Promise<Record<string, unknown>>;
}

// A plain string, so TypeScript does not pull the package's typings (which reference lib "dom").
const MODULE: string = '@cdktf/hcl2json';

let loading: Promise<Hcl2Json> | undefined;

function load(): Promise<Hcl2Json> {
  loading ??= import(MODULE).then((mod: unknown) => {
    const parse = (mod as Partial<Hcl2Json> | undefined)?.parse;
    if (typeof parse !== 'function') throw new Error(`${MODULE} has no parse function`);
    return { parse };
  });
  return loading;
}

/** Thrown for HCL the parser rejects; `detail` is the parser's diagnostic, positions as `At L:C:`. */
export class HclSyntaxError extends Error {
  override readonly name = 'HclSyntaxError';
  constructor(readonly detail: string) {
    super(detail);
  }
}

/**
 * Parses HCL into the JSON object HCL's converter produces: attributes as values, each labelled
 * block as `{ <label>: [ <body>, … ] }` (a repeated block adds another body to the list).
 */
export async function hclToObject(text: string): Promise<Record<string, unknown>> {
  const hcl = await load();
  try {
    return await hcl.parse(FILENAME, text);
  } catch (err) {
    // HCL 1 allows several items of a block on one line; retried with one per line, and if that
    // fails too, the diagnostic is the original text's, so its positions stay right.
    const rewritten = oneItemPerLine(text);
    if (rewritten !== undefined && rewritten !== text) {
      try {
        return await hcl.parse(FILENAME, rewritten);
      } catch {
        // the original diagnostic below
      }
    }
    throw new HclSyntaxError(cleanDiagnostic(err instanceof Error ? err.message : String(err)));
  }
}

/** The name the parser is given; it is cut from diagnostics, which callers prefix with their own source. */
const FILENAME = 'input.hcl';

// The converter reports `parse config: [input.hcl:1,20-2,1: Summary; Detail.]`; Consul's own
// (HCL v1) errors read `At 1:20: …`, so the wrapper and the file name go and positions get that shape.
function cleanDiagnostic(message: string): string {
  let detail = message.replace(/^parse config: \[/, '').replace(/\]$/, '');
  detail = detail.replaceAll(/input\.hcl:(\d+),(\d+)(?:-(?:\d+,)?\d+)?/g, '$1:$2');
  return /^\d+:\d+: /.test(detail) ? `At ${detail}` : detail;
}
