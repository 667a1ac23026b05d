// Consul's (hclog's) text line, made from the JSON line pino writes:
// `2026-11-24T10:00:00.000Z [INFO]  agent: svc-agent started: address=127.0.0.1:8500 node=n1`.
// Values with spaces or quotes are quoted; objects are written as JSON; an error shows its
// message (and at error level its stack, indented, on the lines below).

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
  let stack: string | undefined;
  for (const [key, value] of Object.entries(entry)) {
    if (OWN_KEYS.has(key) || value === undefined) continue;
    if (key === 'err' && isErrorLike(value)) {
      fields.push(`error=${quote(value.message)}`);
      if (level === 'error' && typeof value.stack === 'string') stack = value.stack;
      continue;
    }
    fields.push(`${key}=${render(value)}`);
  }
  if (fields.length > 0) line += `${msg === '' ? '' : ':'} ${fields.join(' ')}`;
  if (stack !== undefined) line += `\n${stack.split('\n').map((l) => `  ${l}`).join('\n')}`;
  return `${line}\n`;
}

function isErrorLike(value: unknown): value is { message: string; stack?: unknown } {
  return typeof value === 'object' && value !== null && typeof (value as { message?: unknown }).message === 'string';
}

function render(value: unknown): string {
  if (typeof value === 'string') return quote(value);
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  return quote(JSON.stringify(value));
}

function quote(text: string): string {
  return text === '' || /[\s"=\\]/.test(text) ? JSON.stringify(text) : text;
}
