// Locates the first syntax error in a JSON text as line and column. V8's JSON.parse messages give
// a position only for some errors (and none for "Unexpected token"), and they quote the file's
// text, which may hold a token; this scanner gives a position every time and quotes nothing.

export interface JsonSyntaxError {
  readonly line: number;
  readonly column: number;
  readonly reason: string;
}

class Stop {
  constructor(
    readonly offset: number,
    readonly reason: string,
  ) {}
}

/** The first syntax error in `text`, or undefined when it is valid JSON. */
export function findJsonSyntaxError(text: string): JsonSyntaxError | undefined {
  try {
    new Scanner(text).document();
    return undefined;
  } catch (err) {
    if (!(err instanceof Stop)) throw err;
    return { ...lineAndColumn(text, err.offset), reason: err.reason };
  }
}

function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text[i] === '\n') {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}

class Scanner {
  private i = 0;
  constructor(private readonly s: string) {}

  document(): void {
    this.ws();
    this.value();
    this.ws();
    if (this.i < this.s.length) this.fail('unexpected content after the JSON value');
  }

  private fail(reason: string): never {
    throw new Stop(this.i, reason);
  }

  private unexpected(): never {
    const c = this.s[this.i];
    if (c === undefined) this.fail('unexpected end of input');
    this.fail(`unexpected character ${JSON.stringify(c)}`);
  }

  private ws(): void {
    while (this.i < this.s.length && ' \t\n\r'.includes(this.s[this.i] as string)) this.i++;
  }

  private value(): void {
    const c = this.s[this.i];
    if (c === '{') return this.object();
    if (c === '[') return this.array();
    if (c === '"') return this.string();
    if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) return this.number();
    for (const word of ['true', 'false', 'null']) {
      if (this.s.startsWith(word, this.i)) {
        this.i += word.length;
        return;
      }
    }
    this.unexpected();
  }

  private object(): void {
    this.i++;
    this.ws();
    if (this.s[this.i] === '}') {
      this.i++;
      return;
    }
    for (;;) {
      this.ws();
      if (this.s[this.i] !== '"') this.fail('expected a property name in double quotes');
      this.string();
      this.ws();
      if (this.s[this.i] !== ':') this.fail("expected ':' after a property name");
      this.i++;
      this.ws();
      this.value();
      this.ws();
      const c = this.s[this.i];
      this.i++;
      if (c === '}') return;
      if (c !== ',') {
        this.i--;
        this.fail("expected ',' or '}' after a property value");
      }
    }
  }

  private array(): void {
    this.i++;
    this.ws();
    if (this.s[this.i] === ']') {
      this.i++;
      return;
    }
    for (;;) {
      this.ws();
      this.value();
      this.ws();
      const c = this.s[this.i];
      this.i++;
      if (c === ']') return;
      if (c !== ',') {
        this.i--;
        this.fail("expected ',' or ']' after an array element");
      }
    }
  }

  private string(): void {
    this.i++;
    for (;;) {
      const c = this.s[this.i];
      if (c === undefined) this.fail('unterminated string');
      if (c === '"') {
        this.i++;
        return;
      }
      if (c === '\\') {
        const e = this.s[this.i + 1];
        if (e !== undefined && '"\\/bfnrt'.includes(e)) this.i += 2;
        else if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(this.s.slice(this.i + 2, this.i + 6))) this.i += 6;
        else this.fail('invalid escape in string');
        continue;
      }
      if (c < ' ') this.fail('control character in string');
      this.i++;
    }
  }

  private number(): void {
    const m = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
    m.lastIndex = this.i;
    if (!m.test(this.s)) this.fail('invalid number');
    this.i = m.lastIndex;
  }
}
