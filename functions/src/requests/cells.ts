import { FieldPath, type DocumentData, type DocumentSnapshot } from "firebase-admin/firestore";
import type { Actor } from "../evidence/rules";
import { PRIMARY_CELL } from "../kernel/policy";
import { GONE_BY_UNKNOWN, type GoneByUnknown } from "../kernel/request-states";
import { COLLECTIONS, db, inCell } from "../platform/firestore";
import { toMs } from "../platform/governed-doc";
import { log } from "../platform/logs";
import { registryPolicy } from "../platform/registry";
import { accountsMayGo, cellsOfRecord, cellsSettled, derivedGoneBy, derivedState, followAction, recordTaken, type CellRequestFacts, type FollowAction } from "./rules/cells";
import { GROUP_MAX_SCOPES } from "./rules/group";
import { parseRequestState, type DeletionRequest, type RequestState } from "./rules/requests";
import {
  approveCellRequest,
  approveTenantClosure as approveRecord,
  cancelCellRequest,
  cancelDeletionRequest as cancelRecord,
  openCellRequest,
  openDeletionRequest as openRecord,
  openUserErasure as openErasureRecords,
  releaseCellRequest,
  requestFromFirestore,
  softDeleteCellRequest,
  type CancelOptions,
  type OpenRequestInput,
  type OpenUserErasureInput,
} from "./service";
import type { Canceller } from "./rules/requests";

/**
 * A deletion request across several governed databases (docs/decisions/0036-several-databases.md). The primary
 * database holds the request of record, which lists its other cells (`cells`, written in the transaction that
 * creates it); each of them holds a cell request under the same id. No transaction spans two databases, so the
 * request of record decides (open, approve, cancel: each decided in one transaction of the primary) and every cell
 * request follows it, one cell transaction at a time (`followRecordInCells`); what is not followed yet is followed
 * by the next call or by the nightly reconciliation (`cellsOutstanding`). Every read of another cell here is outside
 * any transaction; each place says why that is safe.
 */

const requestsCol = () => db().collection(COLLECTIONS.deletionRequests);

export { cellsOfRecord };

/**
 * Whether a request document is part of a request across cells: a request of record with cells, or a cell request.
 * Both fields are written when the document is created and never change, so a read outside a transaction is as
 * good as one inside.
 */
export const spansCells = (data: DocumentData | undefined): boolean => cellsOfRecord(data).length > 0 || typeof data?.cellOf === "string";

/** One cell's request as its facts (absent: state null). */
export function cellFacts(cell: string, data: DocumentData | undefined): CellRequestFacts & { softDeleteDone: boolean } {
  const unknown = data?.fullyGoneByUnknown as unknown;
  const held = data?.retainedUnderHold as { count?: unknown } | undefined;
  return {
    cell,
    state: data ? parseRequestState(data.state) : null,
    fullyGoneByMs: toMs(data?.fullyGoneBy),
    fullyGoneByUnknown: (GONE_BY_UNKNOWN as readonly unknown[]).includes(unknown) ? (unknown as GoneByUnknown) : null,
    erasureComplete: data?.erasureComplete === true,
    underHold: typeof held?.count === "number" ? held.count : 0,
    blockedReason: typeof data?.blockedReason === "string" ? data.blockedReason : null,
    awaitingRecord: data?.awaitingRecord === true,
    softDeleteDone: data?.softDeleteDone === true,
  };
}

/** A cell's request document (a point read in that cell's database). */
export const readCellRequest = (requestId: string, cell: string): Promise<DocumentSnapshot> => inCell(cell, () => requestsCol().doc(requestId).get());

/**
 * The facts of every cell of a request of record, the primary's first (from `record`, already read), the others read
 * now, one point read per cell. Outside a transaction: each place that decides on them says why a stale read is
 * safe there.
 */
export async function requestCells(requestId: string, record: DocumentData): Promise<(CellRequestFacts & { softDeleteDone: boolean })[]> {
  const others = await Promise.all(cellsOfRecord(record).map(async (cell) => cellFacts(cell, (await readCellRequest(requestId, cell)).data())));
  return [cellFacts(PRIMARY_CELL, record), ...others];
}

/** What a request across cells reports: its derived state and date, and each cell's own. */
export interface RecordView {
  state: RequestState;
  fullyGoneByMs: number | null;
  fullyGoneByUnknown: GoneByUnknown | null;
  /** Every cell's facts, the primary's first. */
  cells: CellRequestFacts[];
  /** The other cells' requests as read (null: not opened there yet), for their timelines and what a hold keeps there. */
  others: { cell: string; request: DeletionRequest | null; snap: DocumentSnapshot }[];
}

/**
 * The request of record as it reports itself across cells, derived from every cell (requests/rules/cells.ts#
 * derivedState, #derivedGoneBy); null for a request of one database. A cell read stale shows the request a step
 * behind (PROCESSING rather than PURGED), never further on than it is: a cell's state only moves forward once it is
 * taken, and a cancel is decided by the record, which is read here too.
 */
export async function recordView(requestId: string, record: DocumentData): Promise<RecordView | null> {
  const names = cellsOfRecord(record);
  if (names.length === 0) return null;
  const others = await Promise.all(
    names.map(async (cell) => {
      const snap = await readCellRequest(requestId, cell);
      return { cell, snap, request: snap.exists ? requestFromFirestore(snap) : null };
    }),
  );
  const cells = [cellFacts(PRIMARY_CELL, record), ...others.map((o) => cellFacts(o.cell, o.snap.data()))];
  const state = derivedState(cells);
  const goneBy = derivedGoneBy(cells, state);
  return { state, fullyGoneByMs: goneBy.fullyGoneByMs, fullyGoneByUnknown: goneBy.unknown, cells: cells.map(({ softDeleteDone: _s, ...c }) => c), others };
}

/** How many follow steps one cell takes in one pass at most (open, soft-delete, release: three at most in a row). */
const MAX_STEPS = 6;

async function followOne(record: DeletionRequest, cell: string, actor: Actor, nowMs: number, tally: { restored: number }): Promise<FollowAction[]> {
  const done: FollowAction[] = [];
  for (let i = 0; i < MAX_STEPS; i++) {
    // Read in the cell, then acted on in the cell's own transactions, each of which reads the cell request again.
    const facts = cellFacts(cell, (await readCellRequest(record.requestId, cell)).data());
    const action = followAction(record.state, facts);
    if (action === "none") return done;
    await inCell(cell, async () => {
      if (action === "open") await openCellRequest(record, record.state === "AWAITING_APPROVAL" ? "AWAITING_APPROVAL" : "PENDING", recordTaken(record.state), actor, nowMs);
      else if (action === "tombstone") await openCellRequest(record, "CANCELLED", false, actor, nowMs);
      else if (action === "approve") await approveCellRequest(record, actor, nowMs);
      else if (action === "soft-delete") await softDeleteCellRequest(record.requestId, actor, nowMs);
      else if (action === "cancel") tally.restored += (await cancelCellRequest(record.requestId, actor, nowMs)).restored;
      else await releaseCellRequest(record.requestId, record.state, actor, nowMs);
    });
    done.push(action);
  }
  throw new Error(`CELL_FOLLOW_LOOP: request ${record.requestId} in cell ${cell} did not settle after ${MAX_STEPS} steps (${done.join(", ")})`);
}

/**
 * Brings every cell request of a request of record in line with it (requests/rules/cells.ts#followAction): opens
 * the missing ones (and soft-deletes there), follows an approval or a cancel, and releases them to their cells'
 * purges once the record has been taken. Reads the record in the primary first: its state is the decision every
 * cell follows, and each action reads the cell request again in its own transaction. A record read stale (a cancel
 * or a take that just committed) makes this pass do less than it could, never something the record forbids: a
 * release needs a taken record, which no cancel can follow, and a cancel needs a cancelled one, which was never
 * taken, so no cell was released. Every cell is tried; the first failure is thrown after them (the record stays
 * `cellsOutstanding`, and the next call or the nightly reconciliation resumes).
 */
export async function followRecordInCells(requestId: string, actor: Actor, nowMs: number): Promise<{ actions: Record<string, FollowAction[]>; restored: number }> {
  const snap = await inCell(PRIMARY_CELL, () => requestsCol().doc(requestId).get());
  const cells = cellsOfRecord(snap.data());
  const tally = { restored: 0 };
  if (!snap.exists || cells.length === 0) return { actions: {}, restored: 0 };
  const record = requestFromFirestore(snap);
  const out: Record<string, FollowAction[]> = {};
  let failure: Error | null = null;
  for (const cell of cells) {
    try {
      out[cell] = await followOne(record, cell, actor, nowMs, tally);
    } catch (err) {
      log.error("deletion.cells.failed", { requestId, cell, error: err instanceof Error ? err.message : String(err) });
      failure ??= err instanceof Error ? err : new Error(String(err));
    }
  }
  if (Object.values(out).some((a) => a.length > 0)) log.info("deletion.cells.followed", { requestId, cells: Object.entries(out).map(([c, a]) => `${c}:${a.join("+") || "none"}`) });
  if (failure !== null) throw failure;
  return { actions: out, restored: tally.restored };
}

/**
 * Whether the request's Auth account step is done: its own, or, for a member of a request group, the group's (one
 * member records it: purge/runner/group-account.ts). A DONE outcome is never undone, so a read outside a transaction is
 * as good as one inside.
 */
async function accountDone(snap: DocumentSnapshot): Promise<boolean> {
  if (snap.get("authDeletion.state") === "DONE") return true;
  const groupId = snap.get("groupId") as unknown;
  if (typeof groupId !== "string" || groupId === "") return false;
  const members = await requestsCol().where("groupId", "==", groupId).limit(GROUP_MAX_SCOPES).select("authDeletion").get();
  return members.docs.some((d) => d.get("authDeletion.state") === "DONE");
}

/** Whether a request of record needs nothing more from the reconciliation (requests/rules/cells.ts#cellsSettled). */
export async function settleIfDone(requestId: string): Promise<boolean> {
  return inCell(PRIMARY_CELL, async () => {
    const ref = requestsCol().doc(requestId);
    const snap = await ref.get();
    if (!snap.exists || snap.get("cellsOutstanding") !== true) return true;
    const cells = await requestCells(requestId, snap.data()!);
    const state = parseRequestState(snap.get("state"));
    const settled = cellsSettled({ state, accountsDone: await accountDone(snap) }, cells);
    // A stale cell read can only make a settled request look unsettled (one more pass), never the other way: every
    // fact `cellsSettled` asks for (a cell CANCELLED, opened, released) is never undone.
    if (settled) await ref.update({ cellsOutstanding: false });
    return settled;
  });
}

/** Whether every cell of a request of record has erased all it may (the Auth account's condition, decision 0003). */
export async function accountsReady(requestId: string, record: DocumentData): Promise<{ ready: boolean; cells: CellRequestFacts[] }> {
  const cells = await requestCells(requestId, record);
  // A cell read as not done only delays the account; a cell read as done is done for good: PURGED is terminal, and a
  // RETAINED_UNDER_HOLD cell that resumes after a release only erases more.
  return { ready: recordTaken(parseRequestState(record.state)) && accountsMayGo(cells), cells };
}

/** The requests of record the nightly reconciliation looks at (equality on one field: no composite index). */
export async function* outstandingRecords(pageSize = 200): AsyncGenerator<string[]> {
  let last: string | undefined;
  for (;;) {
    const q = requestsCol().where("cellsOutstanding", "==", true).orderBy(FieldPath.documentId()).select().limit(pageSize);
    const snap = await (last ? q.startAfter(last) : q).get();
    if (snap.size > 0) yield snap.docs.map((d) => d.id);
    if (snap.size < pageSize) return;
    last = snap.docs[snap.docs.length - 1]!.id;
  }
}

/** Whether new requests for a subject of this kind open cell requests (the registry in force has a cell that reaches it). */
export const reachesOtherCells = (subject: "user" | "tenant"): boolean => registryPolicy().cellsReaching(subject).length > 0;

/**
 * Opens a deletion request (requests/service.ts#openDeletionRequest, in the primary: the request of record), then
 * its cell request in every other cell its data map reaches, each soft-deleting its own part.
 */
export async function openDeletionRequest(input: OpenRequestInput): ReturnType<typeof openRecord> {
  const opened = await inCell(PRIMARY_CELL, () => openRecord(input));
  if (reachesOtherCells(input.subject.type)) await followRecordInCells(opened.request.requestId, input.actor, input.nowMs);
  return opened;
}

/**
 * Opens a user's erasure in every scope the registry found them in (requests/service.ts#openUserErasure: one request,
 * or a request group, in the primary), then each member's cell requests in every other cell its data map reaches.
 */
export async function openUserErasure(input: OpenUserErasureInput): ReturnType<typeof openErasureRecords> {
  const opened = await inCell(PRIMARY_CELL, () => openErasureRecords(input));
  if (reachesOtherCells("user")) for (const m of opened.members) await followRecordInCells(m.requestId, input.actor, input.nowMs);
  return opened;
}

/** Approves a scope's closure (requests/service.ts#approveTenantClosure), then every cell request follows. */
export async function approveTenantClosure(requestId: string, approver: Actor, nowMs: number): ReturnType<typeof approveRecord> {
  const approved = await inCell(PRIMARY_CELL, () => approveRecord(requestId, approver, nowMs));
  await followRecordInCells(requestId, approver, nowMs);
  return approved;
}

/**
 * Cancels a request (requests/service.ts#cancelDeletionRequest: the owner, the grace and the purge's lease are
 * judged on the request of record), then every cell request follows: each restores its own part. Returns only once
 * every cell is CANCELLED; calling it again finishes a cancel that failed part-way.
 */
export async function cancelDeletionRequest(requestId: string, caller: Canceller, actor: Actor, nowMs: number, opts: CancelOptions = {}): Promise<{ restored: number }> {
  const primary = await inCell(PRIMARY_CELL, () => cancelRecord(requestId, caller, actor, nowMs, opts));
  // A member of a request group is cancelled with its whole group (requests/service.ts): every member follows.
  const snap = await readCellRequest(requestId, PRIMARY_CELL);
  const groupId = snap.get("groupId") as unknown;
  const members =
    typeof groupId === "string"
      ? (await inCell(PRIMARY_CELL, () => db().collection(COLLECTIONS.deletionRequests).where("groupId", "==", groupId).select("cells").get())).docs.map((d) => d.id)
      : [requestId];
  let restored = primary.restored;
  for (const id of members) {
    const record = id === requestId ? snap : await readCellRequest(id, PRIMARY_CELL);
    if (cellsOfRecord(record.data()).length === 0) continue;
    restored += (await followRecordInCells(id, actor, nowMs)).restored;
    const after = await requestCells(id, (await readCellRequest(id, PRIMARY_CELL)).data()!);
    const undone = after.filter((c) => c.cell !== PRIMARY_CELL && c.state !== null && c.state !== "CANCELLED");
    if (undone.length > 0) throw new Error(`CELL_CANCEL_UNFINISHED: request ${id} is not yet cancelled in ${undone.map((c) => c.cell).join(", ")}; cancel again to finish`);
    await settleIfDone(id);
  }
  return { restored };
}
