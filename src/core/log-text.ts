// Consul's (hclog's) text line, made from the JSON line pino writes:
// `2026-11-24T10:00:00.000Z [INFO]  agent: svc-agent started: address=127.0.0.1:8500 node=n1`.
// Values as hclog writes them: a string as it is unless it holds a character outside `-`..`~`
// (a space, a quote, a comma, non-ASCII), then quoted; an empty string as `""`; a list as
// `[a, b]`, an item quoted only when it holds white space (`applied=[log_level]`); a value of
// several lines below the line, each behind `  | `. Objects, which Go would print in its own
// syntax, are written as compact JSON, unquoted. An error shows its message, and its stack (which
// log.ts keeps at debug level only) on the lines below.

const LEVELS: Readonly<Record<string, string>> = {
  trace: '[TRACE] ',
  debug: '[DEBUG] ',
  info: '[INFO]  ',
  warn: '[WARN]  ',
  error: '[ERROR] ',
  fatal: '[ERROR] ',
};

const OWN_KEYS = new Set(['level', 'time', 'component', 'msg']);

export function formatTextLine(json: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json; // not pino's: pass it on as it came
  }
  const level = String(entry.level);
  const component = typeof entry.component === 'string' ? entry.component : 'agent';
  const msg = typeof entry.msg === 'string' ? entry.msg : '';
  let line = `${String(entry.time)} ${LEVELS[level] ?? `[${level.toUpperCase()}] `}${component}:${msg === '' ? '' : ` ${msg}`}`;
  const fields: string[] = [];
  const blocks: string[] = [];
  let stack: string | undefined;
  const add = (key: string, value: string): void => {
    if (value.includes('\n'))
      blocks.push(
        `\n  ${key}=\n${value
          .split('\n')
          .map((l) => `  | ${l}`)
          .join('\n')}`,
      );
    else fields.push(`${key}=${value}`);
  };
  for (const [key, value] of Object.entries(entry)) {
    if (OWN_KEYS.has(key) || value === undefined) continue;
    if (key === 'err' && isErrorLike(value)) {
      add('error', text(value.message));
      if (typeof value.stack === 'string') stack = value.stack;
      continue;
    }
    add(key, render(value));
  }
  if (msg !== '' && fields.length + blocks.length > 0) line += ':';
  if (fields.length > 0) line += ` ${fields.join(' ')}`;
  line += blocks.join('');
  if (stack !== undefined)
    line += `\n${stack
      .split('\n')
      .map((l) => `  ${l}`)
      .join('\n')}`;
  return `${line}\n`;
}

function isErrorLike(value: unknown): value is { message: string; stack?: unknown } {
  return typeof value === 'object' && value !== null && typeof (value as { message?: unknown }).message === 'string';
}

function render(value: unknown): string {
  if (typeof value === 'string') return text(value);
  if (Array.isArray(value)) return `[${value.map(item).join(', ')}]`;
  if (typeof value === 'object' && value !== null) return JSON.stringify(value);
  return String(value);
}

/** hclog's rule for a string value; one of several lines is left for the block form. */
function text(value: string): string {
  if (value === '') return '""';
  if (value.includes('\n')) return value;
  return /[^\x2D-\x7E]/.test(value) ? JSON.stringify(value) : value;
}

function item(value: unknown): string {
  const shown =
    typeof value === 'string'
      ? value
      : typeof value === 'object' && value !== null
        ? JSON.stringify(value)
        : String(value);
  return /[\s]/.test(shown) ? JSON.stringify(shown) : shown;
}
