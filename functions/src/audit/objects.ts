import type { ActiveHoldRef } from "../kernel/held";
import type { StorageEntry } from "../kernel/policy-schema";
import { heldWithPath, listingPrefix, objectPath, objectVars } from "../kernel/storage-map";
import { COLLECTIONS, db } from "../platform/firestore";
import { bucketOfEntry, listObjects } from "../platform/storage";
import { auditObject, type Finding } from "./rules";

/** What the object check read: how many objects, and whether its bound cut it short. */
export interface ObjectAuditStats {
  checked: number;
  truncated: boolean;
}

/**
 * The audit's Cloud Storage check (docs/STORAGE.md): the objects every storage entry of the data map can reach,
 * listed from each entry's literal prefix (`members/`, `workspaces/`: the whole of every subject's folders, once per
 * bucket and prefix), each judged against the active hold records by `auditObject` (audit/rules.ts): markers of holds
 * that are not active, and objects an applied hold covers without its marker. Bounded: at most `maxObjects` objects
 * are read in all (RETENTION_AUDIT_MAX_OBJECTS), and `truncated` says when the bound cut the check short. Reads one
 * query of the active holds' `applied` flags. Nothing for an app without storage entries.
 */
export async function auditObjects(entries: readonly StorageEntry[], holds: readonly ActiveHoldRef[], maxObjects: number, report: (fs: readonly Finding[]) => void): Promise<ObjectAuditStats> {
  const stats: ObjectAuditStats = { checked: 0, truncated: false };
  if (entries.length === 0) return stats;
  const applied = await appliedHolds();
  // One listing per bucket and literal prefix; each object judged against every entry that reaches it.
  const listings = new Map<string, { bucket: string; prefix: string; entries: StorageEntry[] }>();
  for (const e of entries) {
    const prefix = listingPrefix(e, {});
    if (prefix === null) continue;
    const bucket = bucketOfEntry(e);
    const key = `${bucket}\u0000${prefix}`;
    const l = listings.get(key) ?? { bucket, prefix, entries: [] };
    l.entries.push(e);
    listings.set(key, l);
  }
  for (const { bucket, prefix, entries: reaching } of listings.values()) {
    for await (const page of listObjects(bucket, prefix)) {
      for (const o of page) {
        if (stats.checked >= maxObjects) {
          stats.truncated = true;
          return stats;
        }
        stats.checked++;
        const heldWith: string[] = [];
        for (const e of reaching) {
          const vars = objectVars(e, o.name);
          if (vars) heldWith.push(heldWithPath(e, vars));
        }
        if (heldWith.length === 0 && o.holdIds.length === 0) continue;
        report(auditObject({ path: objectPath(o.bucket, o.name), markerHoldIds: o.holdIds, heldWith }, holds, applied));
      }
    }
  }
  return stats;
}

/** The ids of the active holds whose flagging is done: those whose marker every object they cover should carry. */
async function appliedHolds(): Promise<Set<string>> {
  const snap = await db().collection(COLLECTIONS.retentionHolds).where("state", "==", "ACTIVE").select("applied", "releasing").get();
  return new Set(snap.docs.filter((d) => d.get("applied") === true && d.get("releasing") !== true).map((d) => d.id));
}
