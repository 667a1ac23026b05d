// The comments of the repository's TypeScript files, found by TypeScript's own parser (so a `//`
// inside a string, a regex or a template is never taken for one), with the line each starts on.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

export interface SourceComment {
  /** Path from the repository root, with forward slashes. */
  readonly file: string;
  /** 1-based line of the comment's first character. */
  readonly line: number;
  /** The comment as written, markers included. */
  readonly text: string;
}

/** Every `.ts` file under the given folders of `root`, as paths from `root`. */
export function typeScriptFiles(root: string, folders: readonly string[]): string[] {
  return folders
    .flatMap((folder) =>
      readdirSync(join(root, folder), { recursive: true, encoding: 'utf8' }).map((f) => join(folder, f)),
    )
    .filter((f) => f.endsWith('.ts'))
    .map((f) => f.split('\\').join('/'))
    .sort();
}

/** A `,` or `;` right after a node (sticky: matched at lastIndex only). */
const SEPARATOR = /[ \t]*[,;]/y;

/** The comments of `file` (a path from `root`, as typeScriptFiles gives it), in source order. */
export function commentsOf(root: string, file: string): SourceComment[] {
  const text = readFileSync(join(root, file), 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false);
  const seen = new Map<number, ts.CommentRange>();
  const collect = (ranges: readonly ts.CommentRange[] | undefined): void => {
    for (const range of ranges ?? []) seen.set(range.pos, range);
  };
  // Comments sit in the trivia between tokens: scanning it at every node's start and end, and past
  // a `,` or `;` that ends a node, finds all but those inside an empty block, which cite nothing.
  const scanAt = (pos: number): void => {
    collect(ts.getLeadingCommentRanges(text, pos));
    collect(ts.getTrailingCommentRanges(text, pos));
  };
  const visit = (node: ts.Node): void => {
    collect(ts.getLeadingCommentRanges(text, node.pos));
    scanAt(node.end);
    SEPARATOR.lastIndex = node.end;
    if (SEPARATOR.test(text)) scanAt(SEPARATOR.lastIndex);
    ts.forEachChild(node, visit);
  };
  collect(ts.getLeadingCommentRanges(text, 0));
  ts.forEachChild(source, visit);
  return [...seen.values()]
    .sort((a, b) => a.pos - b.pos)
    .map((range) => ({
      file,
      line: source.getLineAndCharacterOfPosition(range.pos).line + 1,
      text: text.slice(range.pos, range.end),
    }));
}
