/** Firestore path helpers. Paths are slash-separated, without a leading slash. */

export function segments(path: string): string[] {
  return path.split("/").filter((s) => s.length > 0);
}

export function isDocumentPath(path: string): boolean {
  const s = segments(path);
  return s.length > 0 && s.length % 2 === 0;
}

export function parentDocumentPath(docPath: string): string | null {
  const s = segments(docPath);
  return s.length >= 4 ? s.slice(0, -2).join("/") : null;
}

/** True when `path` is `ancestor` itself or lies under it. */
export function isSameOrUnder(path: string, ancestor: string): boolean {
  return path === ancestor || path.startsWith(`${ancestor}/`);
}

/** Number of documents on the way down: `a/1` is 1, `a/1/b/2` is 2. Children sort deeper than parents. */
export function documentDepth(path: string): number {
  return Math.floor(segments(path).length / 2);
}

/** Fills `{name}` placeholders; throws when a value is missing, so a plan never runs on a half-built path. */
export function fillTemplate(template: string, vars: Readonly<Record<string, string>>): string {
  return template.replace(/\{([A-Za-z]+)\}/g, (_, name: string) => {
    const v = vars[name];
    if (v === undefined || v === "") throw new Error(`template ${template} needs ${name}`);
    return v;
  });
}

/**
 * Matches a document path against a pattern such as `tenants/{tenantId}/orders/{orderId}`. Returns the
 * captured ids, or null.
 */
export function matchPattern(pattern: string, path: string): Record<string, string> | null {
  const p = segments(pattern);
  const s = segments(path);
  if (p.length !== s.length) return null;
  const vars: Record<string, string> = {};
  for (let i = 0; i < p.length; i++) {
    const part = p[i]!;
    const m = /^\{([A-Za-z]+)\}$/.exec(part);
    if (m) vars[m[1]!] = s[i]!;
    else if (part !== s[i]) return null;
  }
  return vars;
}

/** Sorts deepest first, then by path: the order a purge must delete in (children before parents). */
export function childrenFirst(paths: Iterable<string>): string[] {
  return [...paths].sort((a, b) => documentDepth(b) - documentDepth(a) || (a < b ? -1 : a > b ? 1 : 0));
}

export function sortedUnique(paths: Iterable<string>): string[] {
  return [...new Set(paths)].sort();
}
