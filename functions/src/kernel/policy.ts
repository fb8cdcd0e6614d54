import { PRIMARY_DATABASE, storageEntryCells, type CollectionRule, type DataMapEntry, type GovernedDatabase, type HoldReason, type Registry, type RetentionClass, type StorageEntry, type Subjects } from "./policy-schema";
import { fillTemplate, matchPattern, parentDocumentPath, patternMatchesSegments, segments } from "./paths";

export const DAY_MS = 86_400_000;

/** The logical name of the primary governed database (RETENTION_DATABASE_ID): the cell a field without `database` names. */
export const PRIMARY_CELL = PRIMARY_DATABASE;

/** The cell (governed database, by logical name) a collection rule or data-map entry lives in. */
export const cellOf = (x: { database?: string | undefined }): string => x.database ?? PRIMARY_CELL;

/**
 * The cell a data-map entry runs in. A storage entry names no database (a bucket belongs to none): its objects go
 * with the database of their heldWith document, whose holds are the only ones that can cover them (a hold never
 * targets a gs:// object). So one cell plans, deletes, holds, exports and replays them, once per request.
 */
export const cellOfEntry = (e: DataMapEntry, collections: readonly CollectionRule[]): string =>
  e.kind === "storage" && e.heldWith !== undefined ? (storageEntryCells(e.heldWith, collections)[0] ?? PRIMARY_CELL) : cellOf(e);

/**
 * Read-only lookups over one registry version: which class governs a path, what a class says, which
 * hold reasons exist. Built once per registry; pure.
 */
export class PolicyIndex {
  private readonly classes: ReadonlyMap<string, RetentionClass>;
  private readonly reasons: ReadonlyMap<string, HoldReason>;
  private readonly storage: { user: readonly StorageEntry[]; tenant: readonly StorageEntry[] };

  private readonly views = new Map<string, PolicyIndex>();

  /**
   * `cell`: which governed database this index is the view of (docs/decisions/0036-several-databases.md). The whole
   * registry's index has none; `forCell` makes the others.
   */
  constructor(
    readonly registry: Registry,
    readonly cell: string | null = null,
  ) {
    this.classes = new Map(registry.classes.map((c) => [c.id, c]));
    this.reasons = new Map(registry.holdReasons.map((h) => [h.code, h]));
    const storageOf = (entries: readonly DataMapEntry[] | undefined) => (entries ?? []).filter((e): e is StorageEntry => e.kind === "storage");
    this.storage = { user: storageOf(registry.dataMap.user), tenant: storageOf(registry.dataMap.tenant) };
  }

  /** The governed databases: the primary, then the registry's `databases`, by logical name. */
  cells(): string[] {
    return [PRIMARY_CELL, ...(this.registry.databases ?? []).map((d) => d.id)];
  }

  /** The registry's declaration of an additional database (undefined for the primary or an unknown name). */
  database(cell: string): GovernedDatabase | undefined {
    return (this.registry.databases ?? []).find((d) => d.id === cell);
  }

  /** Whether the registry governs this cell (the primary always). */
  hasCell(cell: string): boolean {
    return cell === PRIMARY_CELL || this.database(cell) !== undefined;
  }

  /**
   * The registry as one cell sees it: the collections and the data-map entries of that database only; classes,
   * hold reasons, subjects, the control plane and the purge's limits are the same in every cell. The engine runs in
   * a cell against this view, unchanged: what it plans, soft-deletes, purges, audits and triggers on is that cell's
   * part of the registry. Memoised; a view of a view is the view of that cell.
   */
  forCell(cell: string): PolicyIndex {
    // A registry of one database is its primary's view: the same index, so what it is compared with stays equal.
    if (this.cell === cell || (this.cell === null && cell === PRIMARY_CELL && this.cells().length === 1)) return this;
    if (this.cell !== null) throw new Error(`a view of cell ${this.cell} has no view of cell ${cell}`);
    let view = this.views.get(cell);
    if (!view) {
      if (!this.hasCell(cell)) throw new Error(`registry ${this.version} governs no database named ${cell} (databases: ${this.cells().join(", ")})`);
      const mine = <T extends { database?: string | undefined }>(xs: readonly T[]): T[] => xs.filter((x) => cellOf(x) === cell);
      const r = this.registry;
      const mineOf = (xs: readonly DataMapEntry[]): DataMapEntry[] => xs.filter((e) => cellOfEntry(e, r.collections) === cell);
      const dataMap = { user: mineOf(r.dataMap.user), ...(r.dataMap.tenant ? { tenant: mineOf(r.dataMap.tenant) } : {}) };
      // The subtree roots a cell knows are its own collections' (a chat lives where its collection does); the scope's
      // record is every cell's: a hold on it holds the scope wherever the scope has data.
      const ownCollections = new Set(mine(r.collections).map((c) => c.pattern.split("/")[0]!));
      const roots = r.subtreeHoldRoots.filter((p) => ownCollections.has(p.split("/")[0]!));
      view = new PolicyIndex({ ...r, collections: mine(r.collections), dataMap, subtreeHoldRoots: roots }, cell);
      this.views.set(cell, view);
    }
    return view;
  }

  /**
   * The cells whose part of a subject's data map is not empty: where a request for such a subject opens a cell
   * request of its own (besides the primary, which holds the request of record in any case).
   */
  cellsReaching(subject: "user" | "tenant"): string[] {
    const entries = this.registry.dataMap[subject] ?? [];
    return this.cells().filter((c) => c !== PRIMARY_CELL && entries.some((e) => cellOfEntry(e, this.registry.collections) === c));
  }

  /**
   * The cells other than the primary where the scope has data a hold on its record covers: a governed collection at
   * or under the scope's record (`workspaces/{workspaceId}/metrics/{id}`). A hold holds by path in every cell, so a hold on
   * the scope's record is placed in each of them too, and there it covers the same subtree.
   */
  cellsWithScopeData(): string[] {
    const scope = this.registry.subjects?.scope;
    if (!scope) return [];
    const root = scope.record.split("/")[0]!;
    return this.cells().filter((c) => c !== PRIMARY_CELL && this.registry.collections.some((r) => cellOf(r) === c && r.pattern.split("/")[0] === root));
  }

  get version(): string {
    return this.registry.version;
  }

  classById(id: string | undefined | null): RetentionClass | undefined {
    return id ? this.classes.get(id) : undefined;
  }

  holdReason(code: string): HoldReason | undefined {
    return this.reasons.get(code);
  }

  /** The collection rule whose pattern matches a document path, if the path is governed. */
  ruleForPath(path: string): CollectionRule | undefined {
    const s = segments(path);
    return this.registry.collections.find((r) => patternMatchesSegments(r.pattern, s));
  }

  /** The class the registry assigns to a path (by its collection), independent of what the document says. */
  classForPath(path: string): RetentionClass | undefined {
    const rule = this.ruleForPath(path);
    return rule ? this.classById(rule.retentionClass) : undefined;
  }

  /** For inherited classes: the parent document whose expireAt the child carries. */
  expiryParentOf(path: string): string | null {
    const rule = this.ruleForPath(path);
    if (!rule?.parentPattern) return null;
    return parentDocumentPath(path);
  }

  /** Collections (by pattern) whose class uses TTL: these get delete triggers. */
  ttlCollections(): CollectionRule[] {
    return this.registry.collections.filter((r) => this.classById(r.retentionClass)?.mechanism === "ttl");
  }

  /** Top-level TTL collections that own child collections under the nested-data rule. */
  childRulesOf(parentPattern: string): CollectionRule[] {
    return this.registry.collections.filter((r) => r.parentPattern === parentPattern);
  }

  /**
   * A subject's data map of documents: a user's, or a scope's closure (empty when the app has no scope kind). Its
   * Cloud Storage entries are apart ({@link storageMap}): everything that walks documents reads this one.
   */
  dataMap(subject: "user" | "tenant"): readonly DataMapEntry[] {
    return (this.registry.dataMap[subject] ?? []).filter((e) => e.kind !== "storage");
  }

  /** A subject's Cloud Storage entries (kind `storage`): objects by prefix or name in a bucket (docs/STORAGE.md). */
  storageMap(subject: "user" | "tenant"): readonly StorageEntry[] {
    return this.storage[subject];
  }

  /** Every storage entry of every subject: empty for an app without objects in its data map, which then pays nothing for them. */
  allStorageEntries(): readonly StorageEntry[] {
    return [...this.storageMap("user"), ...this.storageMap("tenant")];
  }

  /** Whether any data map names Cloud Storage objects (a hold placement then looks for open delete windows). */
  get hasStorageEntries(): boolean {
    return this.allStorageEntries().length > 0;
  }

  /**
   * The entries an erasure of `subject` walks. A user erased in one scope of several (a member of a request
   * group that is not its lead: `scopedOnly`) walks only the entries that name the scope's key: the entries that
   * name the uid alone (a profile `people/{uid}`, a directory entry) reach the same documents from every scope,
   * and the group's lead erases them, once, with one evidence trail (requests/rules/group.ts).
   */
  dataMapOf(subject: { type: "user"; scopedOnly?: boolean } | { type: "tenant" }): readonly DataMapEntry[] {
    const all = this.dataMap(subject.type);
    return subject.type === "user" && subject.scopedOnly === true ? all.filter((e) => this.entryNamesScope(e)) : all;
  }

  /**
   * The Cloud Storage entries an erasure of `subject` walks: as for documents ({@link dataMapOf}), a member of a
   * request group that is not its lead walks only the entries whose prefix or object names the scope's key; the
   * objects named by the uid alone (`avatars/{uid}/`) are the lead's, deleted once, in one delete window.
   */
  storageMapOf(subject: { type: "user"; scopedOnly?: boolean } | { type: "tenant" }): readonly StorageEntry[] {
    const all = this.storageMap(subject.type);
    if (!(subject.type === "user" && subject.scopedOnly === true)) return all;
    const key = this.scope?.key;
    return key ? all.filter((e) => [e.prefix, e.object].some((t) => t?.includes(`{${key}}`) === true)) : [];
  }

  /** Whether a data-map entry names the scope's key (its path, collection or a filter's value): false without a scope kind. */
  entryNamesScope(entry: DataMapEntry): boolean {
    const key = this.scope?.key;
    if (!key) return false;
    const v = `{${key}}`;
    return [entry.path, entry.collection, ...entry.where.map((w) => w[2])].some((t) => t?.includes(v) === true);
  }

  /** Who the data belongs to. The registry check requires it of the version the functions enforce. */
  get subjects(): Subjects {
    if (!this.registry.subjects) throw new Error(`registry ${this.version} declares no subjects`);
    return this.registry.subjects;
  }

  /** The app's scope kind (a tenant, a workspace), if it has one. */
  get scope(): Subjects["scope"] {
    return this.subjects.scope;
  }

  /**
   * The template variables of a subject: `{uid}` for a user, and the scope's key (e.g. `{tenantId}`) for a
   * user in a scope and for a scope itself. An empty scope id means the user belongs to no scope.
   */
  subjectVars(subject: { type: "user"; uid: string; tenantId: string } | { type: "tenant"; tenantId: string }): Record<string, string> {
    const key = this.scope?.key;
    const scoped: Record<string, string> = key && subject.tenantId ? { [key]: subject.tenantId } : {};
    return subject.type === "user" ? { uid: subject.uid, ...scoped } : scoped;
  }

  /** A scope's own record (`workspaces/w-1`), or null when the app has no scope kind. */
  scopeRecordPath(scopeId: string): string | null {
    const scope = this.scope;
    return scope ? fillTemplate(scope.record, { [scope.key]: scopeId }) : null;
  }

  /** The scope a path is the record of (`workspaces/w-1` -> `w-1`), or null. */
  scopeOfRecord(path: string): string | null {
    const scope = this.scope;
    return scope ? (matchPattern(scope.record, path)?.[scope.key] ?? null) : null;
  }

  /** The collection path of the scope records (`workspaces`). */
  scopeCollection(): string | null {
    const record = this.scope?.record;
    return record ? record.slice(0, record.lastIndexOf("/")) : null;
  }

  /** The document patterns a hold holds as a subtree: the scope's record and the registry's subtree roots. */
  subtreeHoldRoots(): string[] {
    return [...(this.scope ? [this.scope.record] : []), ...this.registry.subtreeHoldRoots];
  }

  /** Every collection name the registry knows, governed or control plane. */
  knownCollectionIds(): Set<string> {
    const ids = new Set<string>();
    for (const r of this.registry.collections) {
      const parts = r.pattern.split("/");
      for (let i = 0; i < parts.length; i += 2) ids.add(parts[i]!);
    }
    for (const c of this.registry.controlPlane) ids.add(c.collection);
    return ids;
  }

  /** The class the registry gives a control-plane collection (e.g. `archives` -> audit-7y). */
  controlPlaneClass(collection: string): RetentionClass | undefined {
    return this.classById(this.registry.controlPlane.find((c) => c.collection === collection)?.retentionClass);
  }

  isControlPlane(collection: string): boolean {
    return this.registry.controlPlane.some((c) => c.collection === collection);
  }
}
