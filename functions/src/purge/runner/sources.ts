import { FieldPath, type QueryDocumentSnapshot } from "firebase-admin/firestore";
import { COLLECTIONS, db } from "../../platform/firestore";
import { toMs } from "../../platform/governed-doc";
import { purgeMayTake } from "../../requests/rules/requests";
import { takeFactsOf } from "./unit";

const PAGE = 500;

/** The request states a run may take (each subject to `purgeMayTake`). */
const TAKEABLE = ["PENDING", "PROCESSING", "BLOCKED", "RETAINED_UNDER_HOLD"];

/**
 * Deletion requests a run may take (requests/rules/requests.ts#purgeMayTake), oldest grace end first. The state filter is a
 * single-field query (no composite index); the rest is judged in memory over the few fields it selects.
 */
export async function candidateRequestIds(nowMs: number, limit: number, fenceGeneration: number): Promise<string[]> {
  const found: { id: string; graceMs: number }[] = [];
  let last: QueryDocumentSnapshot | undefined;
  for (;;) {
    let q = db()
      .collection(COLLECTIONS.deletionRequests)
      .where("state", "in", TAKEABLE)
      .select("state", "graceEndsAt", "heldFenceGeneration")
      .orderBy(FieldPath.documentId())
      .limit(PAGE);
    if (last) q = q.startAfter(last);
    const snap = await q.get();
    for (const d of snap.docs) {
      if (purgeMayTake(takeFactsOf(d.data()), nowMs, fenceGeneration)) found.push({ id: d.id, graceMs: toMs(d.get("graceEndsAt")) ?? Number.POSITIVE_INFINITY });
    }
    if (snap.size < PAGE) break;
    last = snap.docs[snap.docs.length - 1];
  }
  return found
    .sort((a, b) => a.graceMs - b.graceMs || (a.id < b.id ? -1 : 1))
    .slice(0, limit)
    .map((f) => f.id);
}
