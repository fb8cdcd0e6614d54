import { FieldPath, Timestamp, type Query } from "firebase-admin/firestore";
import { DomainError } from "../kernel/errors";
import { decodeCursor, DEFAULT_PAGE_SIZE, encodeCursor } from "../kernel/paging";
import { COLLECTIONS, db } from "../platform/firestore";
import { toMs } from "../platform/governed-doc";
import { policy } from "../platform/registry";
import { assertReleaseAllowed, type HoldState } from "./rules";
import { holdFromFirestore } from "./service";

export interface ListHoldsQuery {
  state?: HoldState;
  reasonCode?: string;
  placedBy?: string;
  targetPath?: string;
  pageSize?: number;
  cursor?: string;
  /** Who asks: whether they may release each hold now is judged for them (the two-person rule). */
  callerUid: string;
  nowMs: number;
}

const iso = (ms: number | null | undefined) => (ms === null || ms === undefined ? null : new Date(ms).toISOString());

/** Why `uid` may not release the hold now (TWO_PERSON_RULE, RELEASE_BEFORE_RELEASE_AFTER, HOLD_NOT_ACTIVE), or null. */
function releaseRefusal(hold: Parameters<typeof assertReleaseAllowed>[0], uid: string, nowMs: number): string | null {
  try {
    assertReleaseAllowed(hold, policy().holdReason(hold.reasonCode), uid, nowMs);
    return null;
  } catch (err) {
    if (err instanceof DomainError) return err.reason;
    throw err;
  }
}

/**
 * Hold records, newest placement first, a page at a time: the active ones (default) or the history
 * (RELEASED), narrowed by any of reason code, placer and exact target path. Every combination of those
 * equality filters has its own index ending in placedAt descending (firestore.indexes.json).
 */
export async function listHolds(q: ListHoldsQuery) {
  const state = q.state ?? "ACTIVE";
  const size = q.pageSize ?? DEFAULT_PAGE_SIZE;
  const filters: [string, string | undefined][] = [
    ["reasonCode", q.reasonCode],
    ["placedBy", q.placedBy],
    ["targetPath", q.targetPath],
  ];
  const list = `holds:${state}:${filters.map(([, v]) => v ?? "*").join(":")}`;
  let query: Query = db().collection(COLLECTIONS.retentionHolds).where("state", "==", state);
  for (const [field, value] of filters) if (value !== undefined) query = query.where(field, "==", value);
  query = query.orderBy("placedAt", "desc").orderBy(FieldPath.documentId(), "desc");
  if (q.cursor !== undefined) {
    const [placedAtMs, id] = decodeCursor(list, q.cursor, 2);
    query = query.startAfter(Timestamp.fromMillis(Number(placedAtMs)), String(id));
  }
  const snap = await query.limit(size + 1).get();
  const docs = snap.docs.slice(0, size);
  const pol = policy();
  const items = docs.map((d) => {
    const h = holdFromFirestore(d);
    const reason = pol.holdReason(h.reasonCode);
    return {
      holdId: h.holdId,
      state: h.state,
      targetPath: h.targetPath,
      targetType: h.targetType,
      tenantId: h.tenantId,
      reasonCode: h.reasonCode,
      reasonDescription: reason?.description ?? null,
      // A code no longer in the registry gets the strictest treatment, as a release does.
      twoPersonRelease: reason?.twoPersonRelease ?? true,
      placedBy: h.placedBy,
      placedAt: iso(h.placedAtMs) ?? "",
      releaseAfter: iso(h.releaseAfterMs),
      pastReleaseAfter: h.state === "ACTIVE" && h.releaseAfterMs !== null && h.releaseAfterMs <= q.nowMs,
      note: h.note ?? null,
      affected: h.affected,
      applying: h.state === "ACTIVE" && d.get("applied") === false,
      releaseRefusal: releaseRefusal(h, q.callerUid, q.nowMs),
      releasedBy: h.releasedBy ?? null,
      releasedAt: iso(h.releasedAtMs),
      releaseReason: h.releaseReason ?? null,
    };
  });
  const last = docs[docs.length - 1];
  const nextCursor = snap.docs.length > size && last ? encodeCursor(list, [toMs(last.get("placedAt")) ?? 0, last.id]) : null;
  return { items, nextCursor };
}

/**
 * The release reasons the releasing officers typed, by hold id, for the released holds among `holdIds` (the
 * evidence keeps only their hash: HOLD_RELEASED's detail.releaseReasonHash). Read by id, 100 at most per call.
 */
export async function releaseReasonsOf(holdIds: Iterable<string>): Promise<Map<string, string>> {
  const ids = [...new Set(holdIds)].slice(0, 100);
  const out = new Map<string, string>();
  if (ids.length === 0) return out;
  const col = db().collection(COLLECTIONS.retentionHolds);
  for (const snap of await db().getAll(...ids.map((id) => col.doc(id)))) {
    const reason = snap.get("releaseReason") as unknown;
    if (typeof reason === "string") out.set(snap.id, reason);
  }
  return out;
}
