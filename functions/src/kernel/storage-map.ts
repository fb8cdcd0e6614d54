import { ancestorDocuments, isSameOrUnder, matchPattern, segments } from "./paths";
import type { StorageEntry } from "./policy-schema";

/**
 * The data map's Cloud Storage entries, pure (docs/STORAGE.md): how an object is named in manifests and evidence,
 * how an entry's templates are filled and matched, and which objects a hold on a document covers.
 *
 * An object is named `gs://<bucket>/<name>` wherever a document path would stand (a manifest, a batch record, an
 * evidence entry's `paths`), which can never collide with a Firestore path; with its generation it is
 * `gs://<bucket>/<name>#<generation>`, the exact bytes a decision was about.
 */

export const OBJECT_SCHEME = "gs://";
/** The bucket template that names the project's default bucket (RETENTION_STORAGE_BUCKET). */
export const DEFAULT_BUCKET = "(default)";

/** An object's path in manifests and evidence. */
export const objectPath = (bucket: string, name: string): string => `${OBJECT_SCHEME}${bucket}/${name}`;

/** Whether a manifest or evidence path names a Cloud Storage object rather than a document. */
export const isObjectPath = (path: string): boolean => path.startsWith(OBJECT_SCHEME);

/** The bucket and name of an object path, or null when it is not one. */
export function parseObjectPath(path: string): { bucket: string; name: string } | null {
  if (!isObjectPath(path)) return null;
  const rest = path.slice(OBJECT_SCHEME.length);
  const slash = rest.indexOf("/");
  if (slash <= 0 || slash === rest.length - 1) return null;
  return { bucket: rest.slice(0, slash), name: rest.slice(slash + 1) };
}

/** One version of an object, as evidence names it: `gs://bucket/name#generation`. */
export const objectLabel = (o: { bucket: string; name: string; generation: string }): string => `${objectPath(o.bucket, o.name)}#${o.generation}`;

/** The object path and generation of a label, or null. */
export function parseObjectLabel(label: string): { path: string; generation: string } | null {
  const hash = label.lastIndexOf("#");
  if (hash < 0 || !isObjectPath(label)) return null;
  const generation = label.slice(hash + 1);
  return /^[0-9]+$/.test(generation) ? { path: label.slice(0, hash), generation } : null;
}

/** The bucket an entry names: `(default)` is the project's default bucket, `{projectId}` the project's id. */
export function resolveBucket(template: string, ctx: { projectId: string; defaultBucket: string }): string {
  if (template === DEFAULT_BUCKET) return ctx.defaultBucket;
  return template.replace(/\{projectId\}/g, ctx.projectId);
}

/** The object template of an entry: its prefix, or its one object's name. */
export const templateOf = (entry: Pick<StorageEntry, "prefix" | "object">): string => entry.prefix ?? entry.object ?? "";

/**
 * Fills an object template with a subject's ids. A value with `/` is refused: `members/{uid}/` filled with `a/b` would
 * name a folder inside user `a`'s, so one subject's erasure would reach another's objects.
 */
export function fillObjectTemplate(template: string, vars: Readonly<Record<string, string>>): string {
  return template.replace(/\{([A-Za-z]+)\}/g, (_, name: string) => {
    const v = vars[name];
    if (v === undefined || v === "") throw new Error(`template ${template} needs ${name}`);
    if (v.includes("/")) throw new Error(`STORAGE_ID_WITH_SLASH: ${name} ${JSON.stringify(v)} cannot fill ${template}: an id with / would reach into another subject's objects`);
    return v;
  });
}

const escapeRegex = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const compiled = new Map<string, { re: RegExp; names: string[] }>();

/** The template as a regular expression: each variable one or more characters other than `/`. */
function compile(template: string, whole: boolean): { re: RegExp; names: string[] } {
  const key = `${whole ? "=" : "^"}${template}`;
  let c = compiled.get(key);
  if (!c) {
    const names: string[] = [];
    let source = "";
    let at = 0;
    for (const m of template.matchAll(/\{([A-Za-z]+)\}/g)) {
      source += escapeRegex(template.slice(at, m.index));
      source += "([^/]+)";
      names.push(m[1]!);
      at = m.index + m[0].length;
    }
    source += escapeRegex(template.slice(at));
    c = { re: new RegExp(`^${source}${whole ? "$" : ""}`, "u"), names };
    compiled.set(key, c);
  }
  return c;
}

/**
 * The variables an object's name gives for an entry (a prefix entry: the name starts with the prefix; an object
 * entry: the name is the object), or null when the entry does not reach it. A variable that appears twice must
 * have the same value both times.
 */
export function objectVars(entry: Pick<StorageEntry, "prefix" | "object">, name: string): Record<string, string> | null {
  const { re, names } = compile(templateOf(entry), entry.object !== undefined);
  const m = re.exec(name);
  if (!m) return null;
  const vars: Record<string, string> = {};
  for (let i = 0; i < names.length; i++) {
    const n = names[i]!;
    const v = m[i + 1]!;
    if (vars[n] !== undefined && vars[n] !== v) return null;
    vars[n] = v;
  }
  return vars;
}

/**
 * What to list to find an entry's objects when only some of its variables are known (a hold on a scope's record
 * knows the scope, not each user): the template's literal text up to its first unknown variable. An entry whose
 * variables are all known lists its own prefix (or, for one object, that object's name). Null when the template
 * starts with an unknown variable: listing it would read the whole bucket (the schema refuses such templates).
 */
export function listingPrefix(entry: Pick<StorageEntry, "prefix" | "object">, vars: Readonly<Record<string, string>>): string | null {
  const template = templateOf(entry);
  let out = "";
  let at = 0;
  for (const m of template.matchAll(/\{([A-Za-z]+)\}/g)) {
    out += template.slice(at, m.index);
    const v = vars[m[1]!];
    if (v === undefined || v === "" || v.includes("/")) return out === "" ? null : out;
    out += v;
    at = m.index + m[0].length;
  }
  out += template.slice(at);
  return out === "" ? null : out;
}

/** The document an object is held with, from the variables its name gave. */
export const heldWithPath = (entry: Pick<StorageEntry, "heldWith">, vars: Readonly<Record<string, string>>): string =>
  entry.heldWith.replace(/\{([A-Za-z]+)\}/g, (_, name: string) => {
    const v = vars[name];
    if (v === undefined || v === "") throw new Error(`heldWith ${entry.heldWith} needs ${name}`);
    return v;
  });

/**
 * The hold targets that cover objects held with these documents: each document and each of its ancestors. A delete
 * window lists them (`covers`), so a hold placement finds the windows it covers with one equality query.
 */
export function coverTargets(heldWith: Iterable<string>): string[] {
  const out = new Set<string>();
  for (const h of heldWith) {
    out.add(h);
    for (const a of ancestorDocuments(h)) out.add(a);
  }
  return [...out].sort();
}

/**
 * The variables a hold on `target` fixes for an entry's objects: a hold covers an object when its target is the
 * object's heldWith document or an ancestor of it, so the target must match the heldWith template's first
 * segments. Null when no object of the entry can be covered (the target is elsewhere, or deeper than heldWith).
 */
export function bindingsUnder(entry: Pick<StorageEntry, "heldWith">, target: string): Record<string, string> | null {
  const held = segments(entry.heldWith);
  const t = segments(target);
  if (t.length === 0 || t.length % 2 !== 0 || t.length > held.length) return null;
  return matchPattern(held.slice(0, t.length).join("/"), target);
}

/** Whether a hold on `target` covers an object of `entry` with this name (its heldWith document is the target or under it). */
export function holdTargetCoversObject(entry: Pick<StorageEntry, "prefix" | "object" | "heldWith">, target: string, name: string): boolean {
  const vars = objectVars(entry, name);
  if (!vars) return false;
  try {
    return isSameOrUnder(heldWithPath(entry, vars), target);
  } catch {
    return false;
  }
}
