import { FieldPath, type QueryDocumentSnapshot } from "firebase-admin/firestore";
import { COLLECTIONS, db } from "./firestore";
import { toMs } from "./governed-doc";

const PAGE = 500;

/**
 * Deletion requests a run may take, oldest grace end first: PENDING or BLOCKED whose grace period is
 * over, and PROCESSING (a run that stopped part-way). The state filter is a single-field query (no
 * composite index); the grace check runs in memory over ids and timestamps only.
 */
export async function candidateRequestIds(nowMs: number, limit: number): Promise<string[]> {
  const found: { id: string; graceMs: number }[] = [];
  let last: QueryDocumentSnapshot | undefined;
  for (;;) {
    let q = db()
      .collection(COLLECTIONS.deletionRequests)
      .where("state", "in", ["PENDING", "PROCESSING", "BLOCKED"])
      .select("state", "graceEndsAt")
      .orderBy(FieldPath.documentId())
      .limit(PAGE);
    if (last) q = q.startAfter(last);
    const snap = await q.get();
    for (const d of snap.docs) {
      const graceMs = toMs(d.get("graceEndsAt")) ?? Number.POSITIVE_INFINITY;
      if (d.get("state") === "PROCESSING" || graceMs <= nowMs) found.push({ id: d.id, graceMs });
    }
    if (snap.size < PAGE) break;
    last = snap.docs[snap.docs.length - 1];
  }
  return found
    .sort((a, b) => a.graceMs - b.graceMs || (a.id < b.id ? -1 : 1))
    .slice(0, limit)
    .map((f) => f.id);
}
