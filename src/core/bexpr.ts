// The `?filter=` language of list endpoints (hashicorp/go-bexpr, as Consul uses it): selectors
// compared with values, joined by `and`, `or`, `not` and parentheses. Compiled once per request
// into a predicate over plain objects; a selector must name a field the caller declares. As in the
// go-bexpr Consul builds with (v0.1.2), a list met before the selector's end is searched: the match
// holds if it holds for any element (`Checks.Status == passing`), and never for an empty list.
//
//   Match   := Selector ("==" | "!=") Value | Selector ["not"] ("contains" | "matches") Value
//            | Selector "is" ["not"] "empty" | Value ["not"] "in" Selector
//   Value   := "double-quoted" | `raw` | a bare word or number (taken as its text)
//   Selector:= Identifier ("." Identifier | "[" String "]")*
import { agentError, type AgentError } from './errors.js';

export type Predicate = (item: Readonly<Record<string, unknown>>) => boolean;

type Node =
  | { readonly kind: 'and' | 'or'; readonly left: Node; readonly right: Node }
  | { readonly kind: 'not'; readonly expr: Node }
  | {
      readonly kind: 'match';
      readonly op: MatchOp;
      readonly negate: boolean;
      readonly selector: readonly string[];
      readonly value: string;
      readonly regex?: RegExp;
      /** The selector ends in a key of a declared map: a missing key has Consul's fixed answer. */
      mapKey?: boolean;
    };

type MatchOp = 'equal' | 'contains' | 'matches' | 'empty' | 'in';

type Token =
  | { readonly t: 'word'; readonly text: string; readonly at: number }
  | { readonly t: 'string'; readonly text: string; readonly at: number }
  | { readonly t: 'op'; readonly text: '==' | '!=' | '(' | ')' | '.' | '[' | ']'; readonly at: number };

function syntax(message: string): AgentError {
  return agentError('FILTER_INVALID', { detail: message });
}

/**
 * Compiles `expression` into a predicate. `fields` are the selectable fields by dotted path
 * (`Service.Tags`); those in `maps` may be followed by any key (`Meta.env`, `Meta["app.kubernetes.io/name"]`).
 */
export function compileFilter(
  expression: string,
  fields: ReadonlySet<string>,
  maps: ReadonlySet<string> = new Set(),
): Predicate {
  const parser = new Parser(tokenize(expression));
  const node = parser.parseAll();
  check(node, fields, maps);
  return (item) => evaluate(node, item);
}

function tokenize(src: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i] as string;
    if (/\s/.test(c)) {
      i++;
    } else if (c === '=' || c === '!') {
      if (src[i + 1] !== '=') throw syntax(`1:${i + 1}: unexpected character ${JSON.stringify(c)}`);
      tokens.push({ t: 'op', text: c === '=' ? '==' : '!=', at: i });
      i += 2;
    } else if (c === '(' || c === ')' || c === '.' || c === '[' || c === ']') {
      tokens.push({ t: 'op', text: c, at: i });
      i++;
    } else if (c === '"') {
      let j = i + 1;
      while (j < src.length && src[j] !== '"') j += src[j] === '\\' ? 2 : 1;
      if (j >= src.length) throw syntax(`1:${i + 1}: unterminated string literal`);
      let text: string;
      try {
        text = JSON.parse(src.slice(i, j + 1)) as string;
      } catch {
        throw syntax(`1:${i + 1}: invalid escape in string literal`);
      }
      tokens.push({ t: 'string', text, at: i });
      i = j + 1;
    } else if (c === '`') {
      const j = src.indexOf('`', i + 1);
      if (j === -1) throw syntax(`1:${i + 1}: unterminated string literal`);
      tokens.push({ t: 'string', text: src.slice(i + 1, j), at: i });
      i = j + 1;
    } else {
      const m = /^[A-Za-z0-9_\-/:+*@]+/.exec(src.slice(i));
      if (m === null) throw syntax(`1:${i + 1}: unexpected character ${JSON.stringify(c)}`);
      tokens.push({ t: 'word', text: m[0], at: i });
      i += m[0].length;
    }
  }
  return tokens;
}

const KEYWORDS = new Set(['and', 'or', 'not', 'in', 'is', 'empty', 'contains', 'matches']);

class Parser {
  private pos = 0;
  constructor(private readonly tokens: readonly Token[]) {}

  parseAll(): Node {
    if (this.tokens.length === 0) throw syntax('1:1: no match found, expected an expression');
    const node = this.or();
    const extra = this.tokens[this.pos];
    if (extra !== undefined) throw syntax(`1:${extra.at + 1}: unexpected ${JSON.stringify(extra.text)}`);
    return node;
  }

  private peek(offset = 0): Token | undefined {
    return this.tokens[this.pos + offset];
  }

  private isWord(token: Token | undefined, word: string): boolean {
    return token !== undefined && token.t === 'word' && token.text === word;
  }

  private isOp(token: Token | undefined, op: string): boolean {
    return token !== undefined && token.t === 'op' && token.text === op;
  }

  private or(): Node {
    let left = this.and();
    while (this.isWord(this.peek(), 'or')) {
      this.pos++;
      left = { kind: 'or', left, right: this.and() };
    }
    return left;
  }

  private and(): Node {
    let left = this.not();
    while (this.isWord(this.peek(), 'and')) {
      this.pos++;
      left = { kind: 'and', left, right: this.not() };
    }
    return left;
  }

  private not(): Node {
    if (this.isWord(this.peek(), 'not')) {
      this.pos++;
      return { kind: 'not', expr: this.not() };
    }
    if (this.isOp(this.peek(), '(')) {
      const open = this.peek() as Token;
      this.pos++;
      const inner = this.or();
      if (!this.isOp(this.peek(), ')')) throw syntax(`1:${open.at + 1}: Unmatched parentheses`);
      this.pos++;
      return inner;
    }
    return this.match();
  }

  private match(): Node {
    const start = this.peek();
    if (start === undefined) throw syntax('no match found, expected a match expression at end of input');
    // `Value [not] in Selector`: the only form that starts with a value.
    const next = this.peek(1);
    if (
      start.t === 'string' ||
      this.isWord(next, 'in') ||
      (this.isWord(next, 'not') && this.isWord(this.peek(2), 'in'))
    ) {
      const value = this.value();
      const negate = this.isWord(this.peek(), 'not');
      if (negate) this.pos++;
      if (!this.isWord(this.peek(), 'in')) throw syntax(`1:${start.at + 1}: expected "in" after a value`);
      this.pos++;
      return { kind: 'match', op: 'in', negate, selector: this.selector(), value };
    }
    const selector = this.selector();
    const op = this.peek();
    if (this.isOp(op, '==') || this.isOp(op, '!=')) {
      this.pos++;
      return { kind: 'match', op: 'equal', negate: op?.text === '!=', selector, value: this.value() };
    }
    if (this.isWord(op, 'is')) {
      this.pos++;
      const negate = this.isWord(this.peek(), 'not');
      if (negate) this.pos++;
      if (!this.isWord(this.peek(), 'empty')) throw syntax(`1:${(op as Token).at + 1}: expected "empty" after "is"`);
      this.pos++;
      return { kind: 'match', op: 'empty', negate, selector, value: '' };
    }
    let negate = false;
    if (this.isWord(op, 'not')) {
      negate = true;
      this.pos++;
    }
    const word = this.peek();
    if (this.isWord(word, 'contains') || this.isWord(word, 'matches')) {
      this.pos++;
      const value = this.value();
      if (word?.text === 'contains') return { kind: 'match', op: 'contains', negate, selector, value };
      let regex: RegExp;
      try {
        regex = new RegExp(value);
      } catch (err) {
        throw syntax(`Failed to compile regular expression ${JSON.stringify(value)}: ${(err as Error).message}`);
      }
      return { kind: 'match', op: 'matches', negate, selector, value, regex };
    }
    const at = (word ?? op)?.at;
    throw syntax(
      at === undefined
        ? 'no match found, expected an operator at end of input'
        : `1:${at + 1}: no match found, expected an operator`,
    );
  }

  private selector(): string[] {
    const first = this.peek();
    if (first === undefined || first.t !== 'word' || KEYWORDS.has(first.text) || !/^[A-Za-z]/.test(first.text)) {
      throw syntax(first === undefined ? 'Invalid selector at end of input' : `1:${first.at + 1}: Invalid selector`);
    }
    this.pos++;
    const path = [first.text];
    for (;;) {
      if (this.isOp(this.peek(), '.')) {
        this.pos++;
        const part = this.peek();
        if (part === undefined || part.t !== 'word') throw syntax('Invalid selector: expected a field name after "."');
        this.pos++;
        path.push(part.text);
      } else if (this.isOp(this.peek(), '[')) {
        this.pos++;
        const key = this.peek();
        if (key === undefined || key.t !== 'string' || !this.isOp(this.peek(1), ']'))
          throw syntax('Invalid selector: expected ["key"]');
        this.pos += 2;
        path.push(key.text);
      } else {
        return path;
      }
    }
  }

  private value(): string {
    const token = this.peek();
    if (token === undefined) throw syntax('no match found, expected a value at end of input');
    if (token.t === 'op') throw syntax(`1:${token.at + 1}: expected a value`);
    this.pos++;
    // A bare dotted word (`v1.2`) is one value.
    let text = token.text;
    if (token.t === 'word') {
      while (this.isOp(this.peek(), '.') && this.peek(1)?.t === 'word') {
        text += `.${(this.peek(1) as Token).text}`;
        this.pos += 2;
      }
    }
    return text;
  }
}

function check(node: Node, fields: ReadonlySet<string>, maps: ReadonlySet<string>): void {
  if (node.kind === 'and' || node.kind === 'or') {
    check(node.left, fields, maps);
    check(node.right, fields, maps);
  } else if (node.kind === 'not') {
    check(node.expr, fields, maps);
  } else if (node.kind === 'match') {
    // A field by its dotted path (`Service.Tags`), or one key of a map field (`Service.Meta.env`).
    const path = node.selector;
    const declared = fields.has(path.join('.'));
    node.mapKey = !declared && path.length > 1 && maps.has(path.slice(0, -1).join('.'));
    if (!declared && !node.mapKey) throw syntax(`Selector ${JSON.stringify(node.selector.join('.'))} is not valid`);
  }
}

function evaluate(node: Node, item: Readonly<Record<string, unknown>>): boolean {
  switch (node.kind) {
    case 'and':
      return evaluate(node.left, item) && evaluate(node.right, item);
    case 'or':
      return evaluate(node.left, item) || evaluate(node.right, item);
    case 'not':
      return !evaluate(node.expr, item);
    case 'match':
      return evaluateMatch(node, item, 0);
  }
}

type MatchNode = Extract<Node, { kind: 'match' }>;

/** The match on `value` reached by the first `depth` parts of the selector; lists on the way are searched. */
function evaluateMatch(node: MatchNode, value: unknown, depth: number): boolean {
  const path = node.selector;
  if (depth === path.length) return matches(node, value) !== node.negate;
  // go-bexpr v0.1.2: each element is matched with the negation inside, so `!=` means "some element differs".
  if (Array.isArray(value)) return value.some((element) => evaluateMatch(node, element, depth));
  if (value === null || typeof value !== 'object') return matches(node, undefined) !== node.negate;
  const part = path[depth] as string;
  if (node.mapKey === true && depth === path.length - 1 && !Object.hasOwn(value, part)) return missingKey(node);
  return evaluateMatch(node, (value as Record<string, unknown>)[part], depth + 1);
}

/**
 * go-bexpr v0.1.2 on a key absent from a map: `==`, `in`, `contains` and `is not empty` are false, every
 * other operator (`matches` included) true.
 */
function missingKey(node: MatchNode): boolean {
  if (node.op === 'matches') return true;
  return node.op === 'empty' ? !node.negate : node.negate;
}

function matches(node: MatchNode, field: unknown): boolean {
  switch (node.op) {
    case 'equal':
      return scalarText(field) === node.value;
    case 'empty':
      return isEmpty(field);
    case 'matches':
      return typeof field === 'string' && (node.regex as RegExp).test(field);
    case 'contains':
    case 'in':
      if (Array.isArray(field)) return field.some((element) => scalarText(element) === node.value);
      if (typeof field === 'string') return field.includes(node.value);
      if (field !== null && typeof field === 'object') return Object.hasOwn(field, node.value);
      return false;
  }
}

/** A field as the text a filter value compares with: strings as they are, numbers and booleans printed. */
function scalarText(field: unknown): string | undefined {
  if (field === undefined || field === null) return '';
  if (typeof field === 'string') return field;
  if (typeof field === 'number' || typeof field === 'boolean') return String(field);
  return undefined;
}

function isEmpty(field: unknown): boolean {
  if (field === undefined || field === null) return true;
  if (typeof field === 'string' || Array.isArray(field)) return field.length === 0;
  if (typeof field === 'object') return Object.keys(field).length === 0;
  return false;
}
