import { FieldPath, Timestamp, type Query, type QueryDocumentSnapshot } from "firebase-admin/firestore";
import { DomainError } from "../kernel/errors";
import { decodeCursor, DEFAULT_PAGE_SIZE, encodeCursor } from "../kernel/paging";
import { COLLECTIONS, db, inCell } from "../platform/firestore";
import { PRIMARY_CELL } from "../kernel/policy";
import { toMs } from "../platform/governed-doc";
import { policy, registryPolicy } from "../platform/registry";
import { assertReleaseAllowed, type HoldState } from "./rules";
import { holdFromFirestore } from "./service";

export interface ListHoldsQuery {
  state?: HoldState;
  reasonCode?: string;
  placedBy?: string;
  targetPath?: string;
  pageSize?: number;
  cursor?: string;
  /** Only the holds of this governed database (logical name); default: every one. */
  database?: string;
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
  const whole = registryPolicy();
  const cells = q.database !== undefined ? [q.database] : whole.cells();
  const several = whole.cells().length > 1;
  const list = `holds:${state}:${filters.map(([, v]) => v ?? "*").join(":")}${q.database !== undefined ? `:${q.database}` : ""}`;
  const after = q.cursor !== undefined ? decodeCursor(list, q.cursor, 2) : null;
  // Every cell's holds, each cell's page in the same order from the same position, merged: a hold placed in several
  // cells (a scope hold) has the same id and placement time in each, so it is one item naming its databases.
  const pages = await Promise.all(
    cells.map((cell) =>
      inCell(cell, async () => {
        let query: Query = db().collection(COLLECTIONS.retentionHolds).where("state", "==", state);
        for (const [field, value] of filters) if (value !== undefined) query = query.where(field, "==", value);
        query = query.orderBy("placedAt", "desc").orderBy(FieldPath.documentId(), "desc");
        if (after) query = query.startAfter(Timestamp.fromMillis(Number(after[0])), String(after[1]));
        return (await query.limit(size + 1).get()).docs.map((d) => ({ cell, d, atMs: toMs(d.get("placedAt")) ?? 0 }));
      }),
    ),
  );
  const groups = new Map<string, { cells: string[]; d: QueryDocumentSnapshot; atMs: number }>();
  for (const x of pages.flat().sort((a, b) => b.atMs - a.atMs || (a.d.id < b.d.id ? 1 : a.d.id > b.d.id ? -1 : 0) || (a.cell === PRIMARY_CELL ? -1 : 1))) {
    const g = groups.get(x.d.id);
    if (g) g.cells.push(x.cell);
    else groups.set(x.d.id, { cells: [x.cell], d: x.d, atMs: x.atMs });
  }
  const merged = [...groups.values()];
  const page = merged.slice(0, size);
  const docs = page.map((g) => g.d);
  const pol = policy();
  const items = page.map(({ d, cells: placedIn }) => {
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
      // Under a registry with several governed databases: where the hold lives (its cell, the primary first for a
      // scope hold placed in several), and whether its placement in its other cells is still to finish.
      ...(several ? { database: placedIn[0]!, databases: placedIn, placing: d.get("cellsPending") === true } : {}),
    };
  });
  const last = docs[docs.length - 1];
  const nextCursor = merged.length > size && last ? encodeCursor(list, [toMs(last.get("placedAt")) ?? 0, last.id]) : null;
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
  // A hold lives in its target's cell: every cell is asked (one getAll each), the first reason found is the one.
  for (const cell of registryPolicy().cells()) {
    await inCell(cell, async () => {
      const col = db().collection(COLLECTIONS.retentionHolds);
      for (const snap of await db().getAll(...ids.map((id) => col.doc(id)))) {
        const reason = snap.get("releaseReason") as unknown;
        if (typeof reason === "string" && !out.has(snap.id)) out.set(snap.id, reason);
      }
    });
  }
  return out;
}
