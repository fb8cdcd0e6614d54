import { hashCanonical } from "../kernel/canonical";
import { heldBy, type ActiveHoldRef } from "../kernel/held";
import type { GovernedFields } from "../kernel/governed";
import { ancestorDocuments, sortedUnique } from "../kernel/paths";
import type { PolicyIndex } from "../kernel/policy";
import { isExpired } from "../kernel/retention";

export type Subject = { type: "user"; uid: string; tenantId: string } | { type: "tenant"; tenantId: string };

/** A document found while walking the data map, with the retention fields the planner needs. */
export interface DiscoveredDoc {
  path: string;
  entryId: string;
  doc: Pick<GovernedFields, "legalHold" | "lifecycleState" | "expireAtMs" | "retainUntilMs"> & { retentionClass: string | null };
}

export interface RetainedItem {
  path: string;
  action: "retain" | "mask";
  reasonCode: string;
  reason: string;
  /** Masked fields, for `mask`. */
  fields?: string[];
  /** When the retention ends, if known (ISO date). */
  until?: string;
  holdId?: string;
  /**
   * For a held document: what the erasure would do to it without the hold ("delete" or "mask"). The hold
   * defers that erasure; absent when the data map or its class would keep the document anyway.
   */
  deferredByHold?: "delete" | "mask";
}

export interface DeletionManifest {
  subject: Subject;
  delete: string[];
  retain: RetainedItem[];
  externalCopiesToReview: string[];
  policyVersion: string;
}

export interface DeletionPlan extends DeletionManifest {
  manifestHash: string;
}

/** What the erasure does to a discovered document when no hold is in the way. */
function withoutHold(action: "delete" | "retain" | "mask", doc: DiscoveredDoc["doc"], policy: PolicyIndex, nowMs: number): "delete" | "retain" | "mask" {
  if (action !== "delete") return action;
  const cls = policy.classById(doc.retentionClass);
  return cls && !cls.userDeletable && !isExpired(doc, nowMs) ? "retain" : "delete";
}

/**
 * Builds the deletion manifest for a subject from the documents discovered through its data map. Pure and
 * deterministic: the same data gives the same manifest and hash, because every list is sorted and the
 * hash is SHA-256 over canonical JSON (the time of planning is not part of it).
 *
 * Retained, in this order of precedence (retention beats deletion):
 * - held documents (reason: the hold's reason code), and ancestors of anything retained, so that a purge
 *   never orphans a retained child;
 * - data-map `retain`/`mask` entries (reason from the registry);
 * - documents whose class is not user-deletable and whose retention has not run out (reason: the class).
 */
export function buildDeletionPlan(
  subject: Subject,
  discovered: readonly DiscoveredDoc[],
  activeHolds: readonly ActiveHoldRef[],
  policy: PolicyIndex,
  nowMs: number,
): DeletionPlan {
  const entries = new Map(policy.dataMap(subject.type).map((e) => [e.id, e]));
  const retained = new Map<string, RetainedItem>();
  const toDelete = new Set<string>();
  const external = new Set<string>();

  const byPath = new Map<string, DiscoveredDoc>();
  for (const d of discovered) {
    // A path reached by two entries keeps the stricter one: retain/mask beat delete.
    const prev = byPath.get(d.path);
    const prevAction = prev ? entries.get(prev.entryId)?.action : undefined;
    if (!prev || prevAction === "delete") byPath.set(d.path, d);
  }

  for (const d of [...byPath.values()].sort((a, b) => (a.path < b.path ? -1 : 1))) {
    const entry = entries.get(d.entryId);
    if (!entry) throw new Error(`discovered doc names unknown data-map entry ${d.entryId}`);
    if (entry.external) external.add(d.path);
    const hold = heldBy({ path: d.path, ...d.doc }, activeHolds);
    if (hold) {
      const erasure = withoutHold(entry.action, d.doc, policy, nowMs);
      retained.set(d.path, {
        path: d.path,
        action: "retain",
        reasonCode: hold.reasonCode,
        reason: hold.holdId ? `retention hold ${hold.holdId}` : "document carries a legal hold",
        ...(hold.holdId ? { holdId: hold.holdId } : {}),
        ...(erasure !== "retain" ? { deferredByHold: erasure } : {}),
      });
      continue;
    }
    if (entry.action === "retain" || entry.action === "mask") {
      const until = d.doc.retainUntilMs !== null ? new Date(d.doc.retainUntilMs).toISOString().slice(0, 10) : undefined;
      retained.set(d.path, {
        path: d.path,
        action: entry.action,
        reasonCode: entry.reasonCode ?? "POLICY_RETENTION",
        reason: entry.reason ?? "retained by policy",
        ...(entry.action === "mask" ? { fields: [...(entry.maskFields ?? [])].sort() } : {}),
        ...(until ? { until } : {}),
      });
      continue;
    }
    const cls = policy.classById(d.doc.retentionClass);
    if (cls && !cls.userDeletable && !isExpired(d.doc, nowMs)) {
      const until = d.doc.retainUntilMs !== null ? new Date(d.doc.retainUntilMs).toISOString().slice(0, 10) : undefined;
      retained.set(d.path, {
        path: d.path,
        action: "retain",
        reasonCode: `POLICY_${cls.id.toUpperCase().replace(/-/g, "_")}`,
        reason: `${cls.id}: ${cls.description}`,
        ...(until ? { until } : {}),
      });
      continue;
    }
    toDelete.add(d.path);
  }

  // A parent is never deleted while a descendant is retained: that would orphan the child.
  const ancestorsOfRetained = new Set<string>();
  for (const r of retained.keys()) for (const a of ancestorDocuments(r)) ancestorsOfRetained.add(a);
  for (const path of [...toDelete]) {
    if (ancestorsOfRetained.has(path)) {
      toDelete.delete(path);
      retained.set(path, {
        path,
        action: "retain",
        reasonCode: "RETAINED_DESCENDANT",
        reason: "kept because a document under it is retained",
      });
    }
  }

  const manifest: DeletionManifest = {
    subject,
    delete: sortedUnique(toDelete),
    retain: [...retained.values()].sort((a, b) => (a.path < b.path ? -1 : 1)),
    externalCopiesToReview: sortedUnique(external),
    policyVersion: policy.version,
  };
  return { ...manifest, manifestHash: hashManifest(manifest) };
}

/** SHA-256 of the canonical JSON of a manifest (without its hash). */
export function hashManifest(manifest: DeletionManifest): string {
  const { subject, delete: del, retain, externalCopiesToReview, policyVersion } = manifest;
  return hashCanonical({ subject, delete: del, retain, externalCopiesToReview, policyVersion });
}
