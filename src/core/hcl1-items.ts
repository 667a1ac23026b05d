// HCL 1 (Consul's ACL rules and config files) lets a block hold several items on one line,
// separated by spaces or commas: `service "web" { policy = "read" intentions = "read" }`. HCL 2,
// the parser we have, wants one item per line. This rewrite puts every item of a block on its own
// line and changes nothing else; hcl.ts uses it only for text the parser refused as it was.

type Last = 'start' | 'open' | 'eq' | 'value' | 'key';

/** The text with one block item per line, or undefined when it holds what this rewrite does not read (a heredoc, an open string). */
export function oneItemPerLine(text: string): string | undefined {
  const out: string[] = [];
  /** `{` or `[`: inside a list, commas and line breaks are the list's own. */
  const nesting: string[] = [];
  let last: Last = 'start';
  let sameLine = false; // since the last significant token, no line break
  let i = 0;
  const inBlock = (): boolean => nesting.at(-1) !== '[';
  const breakIfSameItemLine = (): void => {
    if (inBlock() && sameLine && last === 'value') out.push('\n');
  };
  while (i < text.length) {
    const c = text[i] as string;
    if (c === '\n') {
      out.push(c);
      sameLine = false;
      i++;
    } else if (c === ' ' || c === '\t' || c === '\r') {
      out.push(c);
      i++;
    } else if (c === '"') {
      let j = i + 1;
      for (; j < text.length && text[j] !== '"'; j++) {
        if (text[j] === '\\') j++;
        else if (text[j] === '\n') return undefined;
      }
      if (j >= text.length) return undefined;
      // A string after a key is a block label; after `=` (or in a list) it is a value.
      const isLabel: boolean = last === 'key' && inBlock();
      if (!isLabel) breakIfSameItemLine();
      out.push(text.slice(i, j + 1));
      last = isLabel ? 'key' : last === 'eq' || !inBlock() ? 'value' : 'key';
      sameLine = true;
      i = j + 1;
    } else if (c === '#' || (c === '/' && text[i + 1] === '/')) {
      const end = text.indexOf('\n', i);
      out.push(text.slice(i, end === -1 ? text.length : end));
      i = end === -1 ? text.length : end;
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      if (end === -1) return undefined;
      out.push(text.slice(i, end + 2));
      i = end + 2;
    } else if (c === '<' && text[i + 1] === '<') {
      return undefined;
    } else if (c === '{') {
      nesting.push('{');
      out.push('{\n');
      last = 'open';
      sameLine = false;
      i++;
    } else if (c === '[') {
      nesting.push('[');
      out.push('[');
      last = 'open';
      sameLine = true;
      i++;
    } else if (c === '}' || c === ']') {
      if (nesting.pop() !== (c === '}' ? '{' : '[')) return undefined;
      out.push(c === '}' ? '\n}' : ']');
      last = 'value';
      sameLine = true;
      i++;
    } else if (c === ',') {
      out.push(inBlock() ? '\n' : ',');
      if (inBlock()) {
        last = 'open';
        sameLine = false;
      }
      i++;
    } else if (c === '=') {
      out.push(c);
      last = 'eq';
      sameLine = true;
      i++;
    } else {
      // A word or number: a value after `=` or in a list, otherwise the next item's key.
      let j = i;
      while (
        j < text.length &&
        !/[\s"{}[\],=#]/.test(text[j] as string) &&
        !(text[j] === '/' && (text[j + 1] === '/' || text[j + 1] === '*'))
      )
        j++;
      if (j === i) return undefined;
      const isValue: boolean = last === 'eq' || !inBlock();
      if (!isValue) breakIfSameItemLine();
      out.push(text.slice(i, j));
      last = isValue ? 'value' : 'key';
      sameLine = true;
      i = j;
    }
  }
  return nesting.length === 0 ? out.join('') : undefined;
}
