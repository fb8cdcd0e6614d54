import type { CollectionRule, DataMapEntry, HoldReason, Registry, RetentionClass } from "./policy-schema";
import { parentDocumentPath, patternMatchesSegments, segments } from "./paths";

export const DAY_MS = 86_400_000;

/**
 * Read-only lookups over one registry version: which class governs a path, what a class says, which
 * hold reasons exist. Built once per registry; pure.
 */
export class PolicyIndex {
  private readonly classes: ReadonlyMap<string, RetentionClass>;
  private readonly reasons: ReadonlyMap<string, HoldReason>;

  constructor(readonly registry: Registry) {
    this.classes = new Map(registry.classes.map((c) => [c.id, c]));
    this.reasons = new Map(registry.holdReasons.map((h) => [h.code, h]));
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

  dataMap(subject: "user" | "tenant"): readonly DataMapEntry[] {
    return this.registry.dataMap[subject];
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
