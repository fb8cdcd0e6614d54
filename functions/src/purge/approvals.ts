import { FieldPath, Timestamp, type DocumentSnapshot } from "firebase-admin/firestore";
import { decodeCursor, DEFAULT_PAGE_SIZE, encodeCursor } from "../kernel/paging";
import { COLLECTIONS, db } from "../platform/firestore";
import { toMs } from "../platform/governed-doc";
import type { BrakeRecordState } from "./runner/brake";

/** The brake records an approver has to look at: not yet used (waiting, denied, or approved and unused). */
export const UNDECIDED_OR_OPEN: readonly BrakeRecordState[] = ["WAITING", "DENIED", "APPROVED"];

export interface ListBrakeRunsQuery {
  state?: BrakeRecordState;
  pageSize?: number;
  cursor?: string;
}

const str = (v: unknown): string => (typeof v === "string" ? v : "");
const iso = (v: unknown) => {
  const ms = toMs(v);
  return ms === null ? null : new Date(ms).toISOString();
};

function brakeRunFrom(d: DocumentSnapshot) {
  const data = d.data() ?? {};
  const decision = data.decision as Record<string, unknown> | null | undefined;
  const hashes = Array.isArray(data.manifestHashes) ? (data.manifestHashes as { unitKey?: unknown; manifestHash?: unknown }[]) : [];
  const units = Array.isArray(data.units) ? (data.units as unknown[]).map(String) : [];
  return {
    runKey: String(data.runKey ?? d.id.replace(/^brake-/, "")),
    state: data.state as BrakeRecordState,
    kind: data.kind === "request" ? ("request" as const) : ("sweep" as const),
    requestId: typeof data.requestId === "string" ? data.requestId : null,
    collection: typeof data.collection === "string" ? data.collection : null,
    units: units.map((unitKey) => ({ unitKey, manifestHash: str(hashes.find((h) => h.unitKey === unitKey)?.manifestHash) })),
    countsByClass: Object.fromEntries(Object.entries((data.countsByClass as Record<string, unknown> | undefined) ?? {}).filter((e): e is [string, number] => typeof e[1] === "number")),
    wouldDelete: typeof data.wouldDelete === "number" ? data.wouldDelete : 0,
    violations: Array.isArray(data.violations) ? (data.violations as { kind: string; retentionClass?: string }[]) : [],
    policyVersion: String(data.policyVersion ?? ""),
    firstTrippedAt: iso(data.firstTrippedAt),
    lastTrippedAt: iso(data.lastTrippedAt),
    trips: typeof data.trips === "number" ? data.trips : 0,
    lastApprovalProblem: typeof data.lastApprovalProblem === "string" ? data.lastApprovalProblem : null,
    decision:
      decision && (decision.decision === "APPROVE" || decision.decision === "DENY")
        ? {
            decision: decision.decision === "APPROVE" ? ("APPROVE" as const) : ("DENY" as const),
            by: str(decision.by),
            at: iso(decision.at),
            expiresAt: iso(decision.expiresAt),
            note: str(decision.note),
            evidenceShard: typeof decision.evidenceShard === "string" ? decision.evidenceShard : null,
            evidenceSeq: typeof decision.evidenceSeq === "number" ? decision.evidenceSeq : 0,
          }
        : null,
  };
}

/**
 * The deletion sets the mass-deletion brake holds back (`retentionJobs/brake-{runKey}`), most recently tripped
 * first, a page at a time: each with its units and their manifest hashes (the exact set an approval binds
 * to), what it would delete per class, and the decision on it. Index: (state, lastTrippedAt desc).
 */
export async function listBrakeRuns(q: ListBrakeRunsQuery) {
  const size = q.pageSize ?? DEFAULT_PAGE_SIZE;
  const list = `brake:${q.state ?? "*"}`;
  const col = db().collection(COLLECTIONS.retentionJobs);
  let query = (q.state ? col.where("state", "==", q.state) : col.where("state", "in", UNDECIDED_OR_OPEN))
    .orderBy("lastTrippedAt", "desc")
    .orderBy(FieldPath.documentId(), "desc");
  if (q.cursor !== undefined) {
    const [trippedMs, id] = decodeCursor(list, q.cursor, 2);
    query = query.startAfter(Timestamp.fromMillis(Number(trippedMs)), String(id));
  }
  const snap = await query.limit(size + 1).get();
  const docs = snap.docs.slice(0, size);
  const last = docs[docs.length - 1];
  return {
    items: docs.map(brakeRunFrom),
    nextCursor: snap.docs.length > size && last ? encodeCursor(list, [toMs(last.get("lastTrippedAt")) ?? 0, last.id]) : null,
  };
}
