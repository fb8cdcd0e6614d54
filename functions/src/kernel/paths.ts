/** Firestore path helpers. Paths are slash-separated, without a leading slash. */

export function segments(path: string): string[] {
  const s = path.split("/");
  // Hot path (the audit and the planner call this per document): a clean path needs no second array.
  return s.includes("") ? s.filter((x) => x.length > 0) : s;
}

/** A clean path: no leading, trailing or doubled slash, so string offsets match segment boundaries. */
const isClean = (path: string): boolean => path.length > 0 && path[0] !== "/" && path[path.length - 1] !== "/" && !path.includes("//");

export function isDocumentPath(path: string): boolean {
  const s = segments(path);
  return s.length > 0 && s.length % 2 === 0;
}

export function parentDocumentPath(docPath: string): string | null {
  if (isClean(docPath)) {
    // Cut at the second-to-last slash; a parent document needs at least four segments (three slashes).
    const last = docPath.lastIndexOf("/");
    const cut = last > 0 ? docPath.lastIndexOf("/", last - 1) : -1;
    return cut > 0 && docPath.lastIndexOf("/", cut - 1) > 0 ? docPath.slice(0, cut) : null;
  }
  const s = segments(docPath);
  return s.length >= 4 ? s.slice(0, -2).join("/") : null;
}

/**
 * The ancestor documents of a document path, nearest first: `a/1/b/2/c/3` -> `a/1/b/2`, `a/1`. The one
 * definition of "the ancestors of a path" (holds cover them, the purge keeps them above retained data).
 */
export function ancestorDocuments(docPath: string): string[] {
  const out: string[] = [];
  for (let up = parentDocumentPath(docPath); up !== null; up = parentDocumentPath(up)) out.push(up);
  return out;
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

/** A pattern split once: literal segments, and placeholder names where a segment is `{name}`. */
interface CompiledPattern {
  literals: (string | null)[];
  names: (string | null)[];
}

const compiledPatterns = new Map<string, CompiledPattern>();

function compilePattern(pattern: string): CompiledPattern {
  let c = compiledPatterns.get(pattern);
  if (!c) {
    const parts = segments(pattern);
    const names = parts.map((part) => /^\{([A-Za-z]+)\}$/.exec(part)?.[1] ?? null);
    c = { literals: parts.map((part, i) => (names[i] === null ? part : null)), names };
    compiledPatterns.set(pattern, c);
  }
  return c;
}

/** Whether already-split path segments match a pattern (no allocation: the registry lookup's hot path). */
export function patternMatchesSegments(pattern: string, pathSegments: readonly string[]): boolean {
  const c = compilePattern(pattern);
  if (c.literals.length !== pathSegments.length) return false;
  for (let i = 0; i < c.literals.length; i++) {
    const lit = c.literals[i];
    if (lit !== null && lit !== pathSegments[i]) return false;
  }
  return true;
}

/**
 * Matches a document path against a pattern such as `workspaces/{workspaceId}/docs/{docId}`. Returns the
 * captured ids, or null.
 */
export function matchPattern(pattern: string, path: string): Record<string, string> | null {
  const s = segments(path);
  if (!patternMatchesSegments(pattern, s)) return null;
  const { names } = compilePattern(pattern);
  const vars: Record<string, string> = {};
  names.forEach((name, i) => {
    if (name !== null) vars[name] = s[i]!;
  });
  return vars;
}

/** Sorts deepest first, then by path: the order a purge must delete in (children before parents). */
export function childrenFirst(paths: Iterable<string>): string[] {
  return [...paths].sort((a, b) => documentDepth(b) - documentDepth(a) || (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * Firestore's order of document names: segment by segment, each compared by its UTF-8 bytes. Unlike plain
 * string order it keeps a subtree contiguous (`a/b`, `a/b/c/d`, `a/b-x`), which is what lets a stream of
 * names be read depth first.
 */
export function compareNames(a: string, b: string): number {
  if (a === b) return 0;
  // Hot path (the planner, the probe and verification sort and compare names per document): clean names compared in
  // place. At the first unit where they differ, a "/" ends its segment first, so that name sorts first; a name that
  // is a prefix of the other sorts first. Surrogates (where UTF-16 order is not code point order) take the long way.
  if (isClean(a) && isClean(b)) {
    const n = Math.min(a.length, b.length);
    let i = 0;
    while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
    if (i === n) return a.length < b.length ? -1 : 1;
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === SLASH) return -1;
    if (y === SLASH) return 1;
    if (!isSurrogate(x) && !isSurrogate(y)) return x < y ? -1 : 1;
  }
  return compareBySegments(a, b);
}

const SLASH = 0x2f;
const isSurrogate = (unit: number): boolean => unit >= 0xd800 && unit <= 0xdfff;

function compareBySegments(a: string, b: string): number {
  const x = segments(a);
  const y = segments(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const c = compareCodePoints(x[i]!, y[i]!);
    if (c !== 0) return c;
  }
  return x.length - y.length;
}

/** UTF-8 byte order, which is Unicode code point order (plain `<` compares UTF-16 units, which differs past U+FFFF). */
function compareCodePoints(a: string, b: string): number {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(j)!;
    if (x !== y) return x < y ? -1 : 1;
    i += x > 0xffff ? 2 : 1;
    j += y > 0xffff ? 2 : 1;
  }
  return i < a.length ? 1 : j < b.length ? -1 : 0;
}

export function sortedUnique(paths: Iterable<string>): string[] {
  return [...new Set(paths)].sort();
}
