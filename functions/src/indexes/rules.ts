/**
 * Firestore's index rules (native mode, Standard edition), as pure functions of a recorded query shape and the
 * contents of firestore.indexes.json. No Firebase imports and no I/O: the recorder (scripts/index-check/recorder.cjs) produces the
 * shapes, scripts/index-check/check.ts reads the files and prints, and test/unit/scripts/index-check.test.ts pins the rules on known cases.
 *
 * The rules, from the Firestore documentation ("Index types" / index overview, "Manage indexes", the index
 * definition reference for firestore.indexes.json, "TTL policies", and the StructuredQuery.orderBy reference):
 * - Single-field indexes (ascending, descending, array-contains) exist automatically for every field at
 *   COLLECTION scope. A `fieldOverrides` entry for that collection group and field replaces them with exactly
 *   the indexes it lists (`"indexes": []` turns them all off, as a TTL exemption does). A map field's override
 *   also governs its subfields, and a `*` override governs every field of the collection group.
 * - At COLLECTION_GROUP scope nothing is automatic: a collection-group query on a field needs a field override
 *   (or a composite index) with `queryScope: COLLECTION_GROUP`.
 * - Firestore completes a query's order before it picks an index: every inequality field missing from orderBy is
 *   appended in field-name order, then `__name__`, each in the direction of the last explicit order (ascending if
 *   none). An orderBy on a field that also has an `==` filter changes nothing and is dropped.
 * - `==`, `in`, `is null`, `is NaN` are equalities (`in` a disjunction of them); `!=`, `not-in`, `<`, `<=`, `>`,
 *   `>=`, `is not null`, `is not NaN` are inequalities. array-contains(-any) needs the CONTAINS mode.
 * - One index serves a query when its fields are the equality fields (any order; CONTAINS for array filters)
 *   followed by the query's sort fields, in order and direction. `__name__` is implicit at the end of every index.
 * - Equality-only queries on several fields may also be served by merging indexes (zig-zag merge join): every
 *   equality field must be in an index made only of equality fields of the query. Merging is applied only
 *   there; the documented merge of composites sharing an orderBy suffix, and merges with array-contains, are
 *   not relied on (they fail in production in reported cases), so such a query is asked for its own index.
 * - A query whose filters and orders are on `__name__` only needs no index, whatever its scope; kindless
 *   all-descendants queries serve `__name__` only, so a field filter or order there is unsupported.
 * - count() (and any aggregation) needs what the same query needs. OR queries are split into their disjuncts, and
 *   each disjunct needs its own index.
 */

export type Scope = "collection" | "collection-group" | "kindless";
export type Direction = "ASCENDING" | "DESCENDING";
export type Mode = Direction | "CONTAINS";
type QueryScopeName = "COLLECTION" | "COLLECTION_GROUP";

export interface FilterLeaf {
  field: string;
  op: string;
}
export interface FilterGroup {
  op: "AND" | "OR";
  filters: FilterNode[];
}
export type FilterNode = FilterLeaf | FilterGroup;

/** A query as the recorder writes it: everything that decides which index Firestore needs, and nothing else. */
export interface QueryShape {
  database: string;
  scope: Scope;
  collectionId: string | null;
  where: FilterNode | null;
  orderBy: { field: string; direction: Direction }[];
  aggregations: string[];
  findNearest?: string;
  /** A query listener (onSnapshot): it needs the same index as the query. */
  listen?: boolean;
}

export interface IndexFieldConfig {
  fieldPath: string;
  order?: Direction;
  arrayConfig?: "CONTAINS";
  vectorConfig?: unknown;
}
export interface CompositeIndexConfig {
  collectionGroup: string;
  queryScope?: QueryScopeName;
  fields: IndexFieldConfig[];
}
export interface FieldOverrideIndexConfig {
  order?: Direction;
  arrayConfig?: "CONTAINS";
  queryScope?: QueryScopeName;
}
export interface FieldOverrideConfig {
  collectionGroup: string;
  fieldPath: string;
  ttl?: boolean;
  indexes?: FieldOverrideIndexConfig[];
}
/** The contents of firestore.indexes.json. */
export interface IndexConfig {
  indexes?: CompositeIndexConfig[];
  fieldOverrides?: FieldOverrideConfig[];
}

/** Which configured (or automatic) index a query can use. */
export type IndexRef =
  | { kind: "automatic"; collectionGroup: string; fieldPath: string; mode: Mode }
  | { kind: "override"; collectionGroup: string; fieldPath: string; mode: Mode; queryScope: QueryScopeName; override: number }
  | { kind: "composite"; position: number };

/** What one conjunction of a query needs from an index. */
export interface Requirement {
  /** Fields under an equality filter, not also sorted on (any order in the index). */
  equality: string[];
  /** Fields under array-contains / array-contains-any (CONTAINS mode in the index). */
  contains: string[];
  /** The order the index must have after the equality fields (`__name__` excluded: it is implicit). */
  sort: { field: string; direction: Direction }[];
}

export type Proposal =
  | { kind: "fieldOverride"; entry: FieldOverrideConfig; replacesExisting: boolean }
  | { kind: "index"; entry: CompositeIndexConfig };

export type Verdict =
  | { status: "no-index-needed"; why: string }
  | { status: "covered"; by: IndexRef[]; why: string }
  | { status: "missing"; why: string; proposals: Proposal[] }
  | { status: "unsupported"; why: string };

const NAME = "__name__";
const SINGLE_VALUED = new Set(["EQUAL", "IS_NULL", "IS_NAN"]);
const EQUALITY = new Set([...SINGLE_VALUED, "IN"]);
const ARRAY = new Set(["ARRAY_CONTAINS", "ARRAY_CONTAINS_ANY"]);
const INEQUALITY = new Set([
  "NOT_EQUAL",
  "NOT_IN",
  "LESS_THAN",
  "LESS_THAN_OR_EQUAL",
  "GREATER_THAN",
  "GREATER_THAN_OR_EQUAL",
  "IS_NOT_NULL",
  "IS_NOT_NAN",
]);
/** Firestore caps a query at 30 disjunctions; anything far beyond is a recording error, not a query. */
const MAX_DISJUNCTS = 64;
const AUTOMATIC_MODES: Mode[] = ["ASCENDING", "DESCENDING", "CONTAINS"];

const isGroup = (f: FilterNode): f is FilterGroup => "filters" in f;
const byName = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const scopeName = (scope: Scope): QueryScopeName => (scope === "collection-group" ? "COLLECTION_GROUP" : "COLLECTION");

/** The query's filter as a disjunction of conjunctions (OR of ANDs) of leaves. */
export function disjuncts(where: FilterNode | null): FilterLeaf[][] {
  if (where === null) return [[]];
  if (!isGroup(where)) return [[where]];
  const parts = where.filters.map(disjuncts);
  if (where.op === "OR") return parts.flat();
  let acc: FilterLeaf[][] = [[]];
  for (const part of parts) {
    const next: FilterLeaf[][] = [];
    for (const left of acc) for (const right of part) next.push([...left, ...right]);
    if (next.length > MAX_DISJUNCTS) throw new Error(`more than ${MAX_DISJUNCTS} disjuncts`);
    acc = next;
  }
  return acc;
}

/**
 * What one conjunction needs: its equality and array fields, and its full sort (explicit orders, then the
 * inequality fields Firestore appends, in field-name order, in the last explicit order's direction).
 */
export function requirementOf(conjunction: FilterLeaf[], orderBy: QueryShape["orderBy"]): Requirement | { unsupported: string } {
  const equality = new Set<string>();
  const singleValued = new Set<string>();
  const contains = new Set<string>();
  const inequality = new Set<string>();
  for (const leaf of conjunction) {
    if (leaf.field === NAME) continue;
    if (EQUALITY.has(leaf.op)) {
      equality.add(leaf.field);
      if (SINGLE_VALUED.has(leaf.op)) singleValued.add(leaf.field);
    } else if (ARRAY.has(leaf.op)) contains.add(leaf.field);
    else if (INEQUALITY.has(leaf.op)) inequality.add(leaf.field);
    else return { unsupported: `operator ${leaf.op} on ${leaf.field} is not one the checker knows` };
  }
  const lastDirection: Direction = orderBy.at(-1)?.direction ?? "ASCENDING";
  const sort: Requirement["sort"] = [];
  for (const o of orderBy) {
    if (o.field === NAME || singleValued.has(o.field) || sort.some((s) => s.field === o.field)) continue;
    sort.push({ field: o.field, direction: o.direction });
  }
  for (const field of [...inequality].sort(byName)) {
    if (!sort.some((s) => s.field === field)) sort.push({ field, direction: lastDirection });
  }
  const sorted = new Set(sort.map((s) => s.field));
  return {
    equality: [...equality].filter((f) => !sorted.has(f)).sort(byName),
    contains: [...contains].filter((f) => !sorted.has(f)).sort(byName),
    sort,
  };
}

interface Candidate {
  fields: { field: string; mode: Mode }[];
  ref: IndexRef;
}

/** The override that governs `field` in `collectionGroup`: its own, else its closest map parent's, else `*`. */
function governingOverride(config: IndexConfig, collectionGroup: string, field: string): { entry: FieldOverrideConfig; position: number } | null {
  const overrides = config.fieldOverrides ?? [];
  const segments = field.split(".");
  const paths = segments.map((_, i) => segments.slice(0, segments.length - i).join("."));
  for (const path of [...paths, "*"]) {
    const position = overrides.findIndex((o) => o.collectionGroup === collectionGroup && o.fieldPath === path && o.indexes !== undefined);
    if (position >= 0) return { entry: overrides[position]!, position };
  }
  return null;
}

const modeOf = (i: { order?: Direction; arrayConfig?: "CONTAINS" }): Mode | null => i.order ?? (i.arrayConfig === "CONTAINS" ? "CONTAINS" : null);

/** The single-field indexes on `field` that a query of this scope can use. */
export function singleFieldIndexes(config: IndexConfig, collectionGroup: string, scope: Scope, field: string): Candidate[] {
  const wanted = scopeName(scope);
  const governing = governingOverride(config, collectionGroup, field);
  if (governing) {
    const out: Candidate[] = [];
    for (const i of governing.entry.indexes ?? []) {
      const mode = modeOf(i);
      if (mode === null || (i.queryScope ?? "COLLECTION") !== wanted) continue;
      out.push({
        fields: [{ field, mode }],
        ref: { kind: "override", collectionGroup, fieldPath: governing.entry.fieldPath, mode, queryScope: wanted, override: governing.position },
      });
    }
    return out;
  }
  if (wanted !== "COLLECTION") return [];
  return AUTOMATIC_MODES.map((mode) => ({ fields: [{ field, mode }], ref: { kind: "automatic", collectionGroup, fieldPath: field, mode } }));
}

/** The composite indexes a query of this scope on this collection group can use (`__name__` dropped from the end). */
function compositeIndexes(config: IndexConfig, collectionGroup: string, scope: Scope): Candidate[] {
  const wanted = scopeName(scope);
  const out: Candidate[] = [];
  (config.indexes ?? []).forEach((index, position) => {
    if (index.collectionGroup !== collectionGroup || (index.queryScope ?? "COLLECTION") !== wanted) return;
    const fields: Candidate["fields"] = [];
    for (const f of index.fields) {
      const mode = modeOf(f);
      if (mode === null) return; // a vector index serves vector search only
      fields.push({ field: f.fieldPath, mode });
    }
    while (fields.at(-1)?.field === NAME) fields.pop();
    out.push({ fields, ref: { kind: "composite", position } });
  });
  return out;
}

/** Whether one index alone serves the requirement: equality fields (any order) then the sort, exactly. */
function servesAlone(candidate: Candidate, req: Requirement): boolean {
  const prefixLength = req.equality.length + req.contains.length;
  if (candidate.fields.length !== prefixLength + req.sort.length) return false;
  const prefix = candidate.fields.slice(0, prefixLength);
  const suffix = candidate.fields.slice(prefixLength);
  if (!req.sort.every((s, i) => suffix[i]!.field === s.field && suffix[i]!.mode === s.direction)) return false;
  const want = new Map<string, "order" | "contains">([...req.equality.map((f) => [f, "order"] as const), ...req.contains.map((f) => [f, "contains"] as const)]);
  if (new Set(prefix.map((p) => p.field)).size !== prefix.length) return false;
  return prefix.every((p) => {
    const kind = want.get(p.field);
    return kind === "contains" ? p.mode === "CONTAINS" : kind === "order" && p.mode !== "CONTAINS";
  });
}

/** Indexes that can take part in a merge for an equality-only requirement: every field an equality field of it. */
function mergeable(candidate: Candidate, req: Requirement): boolean {
  const eq = new Set(req.equality);
  return candidate.fields.length > 0 && candidate.fields.every((f) => eq.has(f.field) && f.mode !== "CONTAINS");
}

function candidatesFor(config: IndexConfig, collectionGroup: string, scope: Scope, req: Requirement): Candidate[] {
  const fields = new Set([...req.equality, ...req.contains, ...req.sort.map((s) => s.field)]);
  return [...[...fields].flatMap((f) => singleFieldIndexes(config, collectionGroup, scope, f)), ...compositeIndexes(config, collectionGroup, scope)];
}

/** The JSON to add for a single-field index: the field's override with the missing index added to what it has now. */
export function overrideProposal(config: IndexConfig, collectionGroup: string, field: string, mode: Mode, scope: Scope): Proposal {
  const overrides = config.fieldOverrides ?? [];
  const own = overrides.find((o) => o.collectionGroup === collectionGroup && o.fieldPath === field);
  const governing = governingOverride(config, collectionGroup, field);
  // What the field has today, kept as it is, so adding the entry changes nothing else.
  const current: FieldOverrideIndexConfig[] = governing
    ? [...(governing.entry.indexes ?? [])]
    : [{ order: "ASCENDING", queryScope: "COLLECTION" }, { order: "DESCENDING", queryScope: "COLLECTION" }, { arrayConfig: "CONTAINS", queryScope: "COLLECTION" }];
  const added: FieldOverrideIndexConfig = mode === "CONTAINS" ? { arrayConfig: "CONTAINS", queryScope: scopeName(scope) } : { order: mode, queryScope: scopeName(scope) };
  const indexes = mergeOverrideIndexes(current, [added]);
  return {
    kind: "fieldOverride",
    entry: { collectionGroup, fieldPath: field, ...(own?.ttl ? { ttl: true } : {}), indexes },
    replacesExisting: own !== undefined,
  };
}

const overrideIndexKey = (i: FieldOverrideIndexConfig): string => `${modeOf(i)}@${i.queryScope ?? "COLLECTION"}`;

/** The union of two override index lists, in a stable order (collection scope first, then ascending, descending, contains). */
export function mergeOverrideIndexes(a: FieldOverrideIndexConfig[], b: FieldOverrideIndexConfig[]): FieldOverrideIndexConfig[] {
  const byKey = new Map<string, FieldOverrideIndexConfig>();
  for (const i of [...a, ...b]) {
    const mode = modeOf(i);
    if (mode === null) continue;
    const queryScope = i.queryScope ?? "COLLECTION";
    byKey.set(overrideIndexKey(i), mode === "CONTAINS" ? { arrayConfig: "CONTAINS", queryScope } : { order: mode, queryScope });
  }
  const rank = (i: FieldOverrideIndexConfig): number => (i.queryScope === "COLLECTION_GROUP" ? 10 : 0) + AUTOMATIC_MODES.indexOf(modeOf(i)!);
  return [...byKey.values()].sort((x, y) => rank(x) - rank(y));
}

function proposalsFor(config: IndexConfig, collectionGroup: string, scope: Scope, req: Requirement, candidates: Candidate[]): Proposal[] {
  const fields = new Set([...req.equality, ...req.contains, ...req.sort.map((s) => s.field)]);
  if (fields.size === 1) {
    const field = [...fields][0]!;
    const mode: Mode = req.contains.length > 0 ? "CONTAINS" : (req.sort[0]?.direction ?? "ASCENDING");
    return [overrideProposal(config, collectionGroup, field, mode, scope)];
  }
  if (req.sort.length === 0 && req.contains.length === 0) {
    // Equality only: give each field that no index covers its single-field index; merging does the rest.
    return req.equality
      .filter((e) => !candidates.some((c) => mergeable(c, req) && c.fields.some((f) => f.field === e)))
      .map((e) => overrideProposal(config, collectionGroup, e, "ASCENDING", scope));
  }
  const prefix = [...req.contains.map((f) => ({ fieldPath: f, arrayConfig: "CONTAINS" as const })), ...req.equality.map((f) => ({ fieldPath: f, order: "ASCENDING" as const }))].sort((a, b) =>
    byName(a.fieldPath, b.fieldPath),
  );
  return [
    {
      kind: "index",
      entry: {
        collectionGroup,
        queryScope: scopeName(scope),
        fields: [...prefix, ...req.sort.map((s) => ({ fieldPath: s.field, order: s.direction }))],
      },
    },
  ];
}

function describeRequirement(req: Requirement): string {
  const parts = [
    ...req.equality.map((f) => `${f} (equality)`),
    ...req.contains.map((f) => `${f} (array-contains)`),
    ...req.sort.map((s) => `${s.field} ${s.direction === "ASCENDING" ? "asc" : "desc"} (sort)`),
  ];
  return parts.join(", ");
}

function verdictForConjunction(config: IndexConfig, shape: QueryShape, conjunction: FilterLeaf[]): Verdict {
  const req = requirementOf(conjunction, shape.orderBy);
  if ("unsupported" in req) return { status: "unsupported", why: req.unsupported };
  const fieldCount = req.equality.length + req.contains.length + req.sort.length;
  if (fieldCount === 0) return { status: "no-index-needed", why: "filters and orders on __name__ only: served by the built-in document-name index" };
  if (shape.scope === "kindless" || shape.collectionId === null) {
    return { status: "unsupported", why: `a kindless all-descendants query can filter and order on __name__ only, not on ${describeRequirement(req)}` };
  }
  const collectionGroup = shape.collectionId;
  const candidates = candidatesFor(config, collectionGroup, shape.scope, req);
  const alone = candidates.filter((c) => servesAlone(c, req));
  if (alone.length > 0) return { status: "covered", by: alone.map((c) => c.ref), why: `an index on ${describeRequirement(req)}` };
  if (req.sort.length === 0 && req.contains.length === 0 && req.equality.length > 1) {
    const usable = candidates.filter((c) => mergeable(c, req));
    if (req.equality.every((e) => usable.some((c) => c.fields.some((f) => f.field === e)))) {
      return { status: "covered", by: usable.map((c) => c.ref), why: `equality on ${req.equality.join(", ")}, served by merging indexes` };
    }
  }
  const scopeWords = shape.scope === "collection-group" ? "collection-group" : "collection";
  let why = `no ${scopeWords} index on ${describeRequirement(req)}`;
  if (shape.scope === "collection-group" && fieldCount === 1) {
    why += ": Firestore keeps no single-field index at collection-group scope unless a field override asks for one";
  } else if (shape.scope === "collection") {
    for (const f of new Set([...req.equality, ...req.contains, ...req.sort.map((s) => s.field)])) {
      const governing = governingOverride(config, collectionGroup, f);
      if (!governing) continue;
      const left = singleFieldIndexes(config, collectionGroup, shape.scope, f).map((c) => c.fields[0]!.mode.toLowerCase());
      if (left.length === AUTOMATIC_MODES.length) continue;
      const entry = `${collectionGroup}.${governing.entry.fieldPath}${governing.entry.ttl ? " (a TTL field)" : ""}`;
      why += `; the fieldOverrides entry for ${entry} leaves ${f} ${left.length === 0 ? "no single-field index" : `only ${left.join(" and ")}`} at collection scope`;
    }
  }
  if (fieldCount > 1 && (req.sort.length > 0 || req.contains.length > 0)) why += "; fields followed by a sort or range, or combined with array-contains, need one composite index";
  return { status: "missing", why, proposals: proposalsFor(config, collectionGroup, shape.scope, req, candidates) };
}

/** Whether production Firestore can run `shape` with the indexes in `config`, and if not, what to add. */
export function checkQuery(config: IndexConfig, shape: QueryShape): Verdict {
  if (shape.findNearest !== undefined) {
    return { status: "unsupported", why: `vector search on ${shape.findNearest} needs a vector index, which this check does not model` };
  }
  let parts: FilterLeaf[][];
  try {
    parts = disjuncts(shape.where);
  } catch (err) {
    return { status: "unsupported", why: `the filter could not be expanded: ${(err as Error).message}` };
  }
  const verdicts = parts.map((p) => verdictForConjunction(config, shape, p));
  const bad = verdicts.find((v) => v.status === "unsupported");
  if (bad) return bad;
  const missing = verdicts.filter((v): v is Extract<Verdict, { status: "missing" }> => v.status === "missing");
  if (missing.length > 0) {
    return { status: "missing", why: missing.map((m) => m.why).join(" | "), proposals: missing.flatMap((m) => m.proposals) };
  }
  const covered = verdicts.filter((v): v is Extract<Verdict, { status: "covered" }> => v.status === "covered");
  if (covered.length === 0) return verdicts[0] as Verdict;
  return { status: "covered", by: covered.flatMap((c) => c.by), why: covered.map((c) => c.why).join(" | ") };
}

/** Merges proposals that touch the same field override or repeat the same composite index. */
export function mergeProposals(proposals: Proposal[]): Proposal[] {
  const overrides = new Map<string, Extract<Proposal, { kind: "fieldOverride" }>>();
  const indexes = new Map<string, Extract<Proposal, { kind: "index" }>>();
  for (const p of proposals) {
    if (p.kind === "index") {
      indexes.set(JSON.stringify(p.entry), p);
      continue;
    }
    const key = `${p.entry.collectionGroup}\u0000${p.entry.fieldPath}`;
    const seen = overrides.get(key);
    overrides.set(
      key,
      seen
        ? { ...seen, entry: { ...seen.entry, indexes: mergeOverrideIndexes(seen.entry.indexes ?? [], p.entry.indexes ?? []) } }
        : p,
    );
  }
  return [...overrides.values(), ...indexes.values()];
}

export interface UnusedEntry {
  kind: "index" | "fieldOverride";
  entry: CompositeIndexConfig | FieldOverrideConfig;
  /** For a field override: the listed indexes no recorded query can use. */
  unusedIndexes?: FieldOverrideIndexConfig[];
}

/**
 * Composite indexes and field-override indexes that no recorded query can use. TTL exemptions (`"indexes": []`)
 * are settings, not indexes, and are never listed.
 */
export function unusedIndexes(config: IndexConfig, used: IndexRef[]): UnusedEntry[] {
  const out: UnusedEntry[] = [];
  const usedComposites = new Set(used.flatMap((r) => (r.kind === "composite" ? [r.position] : [])));
  (config.indexes ?? []).forEach((entry, position) => {
    if (!usedComposites.has(position)) out.push({ kind: "index", entry });
  });
  (config.fieldOverrides ?? []).forEach((entry, position) => {
    const usedHere = new Set(used.flatMap((r) => (r.kind === "override" && r.override === position ? [`${r.mode}@${r.queryScope}`] : [])));
    const unused = (entry.indexes ?? []).filter((i) => !usedHere.has(overrideIndexKey(i)));
    if (unused.length > 0) out.push({ kind: "fieldOverride", entry, unusedIndexes: unused });
  });
  return out;
}

const OPS: Record<string, string> = {
  EQUAL: "==",
  NOT_EQUAL: "!=",
  LESS_THAN: "<",
  LESS_THAN_OR_EQUAL: "<=",
  GREATER_THAN: ">",
  GREATER_THAN_OR_EQUAL: ">=",
  IN: "in",
  NOT_IN: "not-in",
  ARRAY_CONTAINS: "array-contains",
  ARRAY_CONTAINS_ANY: "array-contains-any",
  IS_NULL: "== null",
  IS_NOT_NULL: "!= null",
  IS_NAN: "== NaN",
  IS_NOT_NAN: "!= NaN",
};

function describeFilter(f: FilterNode): string {
  if (isGroup(f)) return `${f.op.toLowerCase()}(${f.filters.map(describeFilter).join(", ")})`;
  return `${f.field} ${OPS[f.op] ?? f.op}`;
}

/** A query shape in Admin SDK terms, values left out: `collectionGroup("<id>").where(<field> ==).count()`. */
export function describeQuery(shape: QueryShape): string {
  const from =
    shape.scope === "kindless" ? "kindless all-descendants query" : shape.scope === "collection-group" ? `collectionGroup("${shape.collectionId}")` : `collection("…/${shape.collectionId}")`;
  const where = shape.where === null ? [] : isGroup(shape.where) && shape.where.op === "AND" ? shape.where.filters : [shape.where];
  const parts = [
    from,
    ...where.map((f) => `.where(${describeFilter(f)})`),
    ...shape.orderBy.map((o) => `.orderBy(${o.field}${o.direction === "DESCENDING" ? " desc" : ""})`),
    ...shape.aggregations.map((a) => `.${a === "count" ? "count()" : a}`),
    ...(shape.listen ? [".onSnapshot()"] : []),
  ];
  return parts.join("");
}
