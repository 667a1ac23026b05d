// Exact-and-prefix name matching for one ACL resource (docs/decisions.md#acl-rules), a radix tree
// as in Consul: walk from the root along the name; every prefix rule met on the way replaces the
// candidate (so the longest prefix wins), and an exact rule at the end of the name overrides them.
// A lookup costs one step per tree edge on the name's path (a Map get and a startsWith), not one
// per rule, so it stays flat as prefixes grow. Guarded by bench/micro/acl-authorizer.ts.

/** What a lookup returns when no rule matches. Stored values must be ≥ 0. */
export const NONE = -1;

class Node {
  exact = NONE;
  prefix = NONE;
  children: Map<number, Node> | null = null;
  constructor(
    /** The edge from the parent: the name characters this node adds. */
    public label: string,
  ) {}
}

export class NameIndex {
  private readonly root = new Node('');

  /** Sets the value of the exact rule (`prefix` false) or the prefix rule for `name`. */
  set(name: string, prefix: boolean, value: number): void {
    const node = this.insert(name);
    if (prefix) node.prefix = value;
    else node.exact = value;
  }

  /** The exact rule for `name`, else the longest prefix rule `name` starts with, else NONE. */
  lookup(name: string): number {
    let node = this.root;
    let best = node.prefix;
    let pos = 0;
    const end = name.length;
    while (pos < end) {
      const child = node.children?.get(name.charCodeAt(pos));
      if (child === undefined || !name.startsWith(child.label, pos)) return best;
      pos += child.label.length;
      node = child;
      if (node.prefix !== NONE) best = node.prefix;
    }
    return node.exact !== NONE ? node.exact : best;
  }

  private insert(name: string): Node {
    let node = this.root;
    let pos = 0;
    while (pos < name.length) {
      const first = name.charCodeAt(pos);
      node.children ??= new Map();
      const child = node.children.get(first);
      if (child === undefined) {
        const leaf = new Node(name.slice(pos));
        node.children.set(first, leaf);
        return leaf;
      }
      // Length of the common run of the child's label and the rest of the name.
      const label = child.label;
      let common = 1;
      while (
        common < label.length &&
        pos + common < name.length &&
        label.charCodeAt(common) === name.charCodeAt(pos + common)
      ) {
        common++;
      }
      if (common < label.length) {
        // Split the edge: a new node for the shared part, the old child below it.
        const mid = new Node(label.slice(0, common));
        child.label = label.slice(common);
        mid.children = new Map([[child.label.charCodeAt(0), child]]);
        node.children.set(first, mid);
        node = mid;
      } else {
        node = child;
      }
      pos += common;
    }
    return node;
  }
}
