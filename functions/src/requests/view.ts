import type { DocumentSnapshot } from "firebase-admin/firestore";
import { inCell } from "../platform/firestore";
import { policy } from "../platform/registry";
import { recordView, type RecordView } from "./cells";
import { goneByFacts, staffFacts } from "./queries";
import type { DeletionRequest, RequestState } from "./rules/requests";
import { describeRetained, type RetainedStatusItem, type StatusAudience } from "./rules/status";
import type { GoneByUnknown } from "../kernel/request-states";
import { currentStatusSummary } from "./status";

const iso = (ms: number) => new Date(ms).toISOString();
const isoOrNull = (ms: number | null) => (ms === null ? null : iso(ms));

/** One governed database's part of a request across several, as a status reports it. */
export interface CellView {
  database: string;
  state: RequestState | null;
  fullyGoneBy: string | null;
  fullyGoneByUnknown: GoneByUnknown | null;
  erasureComplete: boolean;
  underHold: number;
  blockedReason: string | null;
  awaitingRecord: boolean;
}

/** A request as getDeletionStatus and `retention requests show` report it (the callable adds the staff's names). */
export interface StatusView {
  requestId: string;
  state: RequestState;
  graceEndsAt: string | null;
  dueAt: string | null;
  timeline: { at: string; event: string; detail?: string; database?: string }[];
  retained: (RetainedStatusItem & { database?: string })[];
  retainedOmitted?: number;
  fullyGoneBy: string | null;
  fullyGoneByUnknown: GoneByUnknown | null;
  erasureCompleteAt: string | null;
  /** A request across several governed databases: each database's part. */
  cells?: CellView[];
  /** Staff only: whose it is, why it is blocked, what holds keep (in every database). */
  staff?: ReturnType<typeof staffFacts>;
}

/**
 * What a request reports (docs/CONTRACT.md, getDeletionStatus): its state, dates and timeline, what is kept and why
 * (from each database's status summary, planned at most every RETENTION_STATUS_REFRESH_MINUTES or when holds
 * change), and its "fully gone by" date. Across several governed databases (requests/cells.ts#recordView) the state
 * and the date are derived from every database's part, each database's events and kept items are named by it, and
 * staff see what holds keep in each. `audience` decides what is said of a hold (requests/rules/status.ts).
 */
export async function statusView(request: DeletionRequest, snap: DocumentSnapshot, audience: StatusAudience, env: { nowMs: number; refreshMs: number }): Promise<StatusView> {
  const view = await recordView(request.requestId, snap.data() ?? {});
  const facts = audience === "staff" ? staffFacts(snap) : null;
  if (view === null) {
    const summary = await currentStatusSummary(request, env.nowMs, env.refreshMs);
    return {
      requestId: request.requestId,
      state: request.state,
      graceEndsAt: isoOrNull(request.graceEndsAtMs),
      dueAt: isoOrNull(request.dueAtMs),
      timeline: request.timeline.map((t) => ({ at: iso(t.atMs), event: t.event, ...(t.detail !== undefined ? { detail: t.detail } : {}) })),
      retained: describeRetained(summary.retained, policy(), audience),
      ...(summary.retainedOmitted > 0 ? { retainedOmitted: summary.retainedOmitted } : {}),
      ...goneByFacts(snap),
      ...(facts ? { staff: facts } : {}),
    };
  }
  const summaries = await Promise.all(view.cells.map(async (c) => ({ cell: c.cell, summary: await inCell(c.cell, () => currentStatusSummary(request, env.nowMs, env.refreshMs)) })));
  const retained = summaries.flatMap(({ cell, summary }) => describeRetained(summary.retained, policy(), audience).map((r) => ({ ...r, database: cell })));
  const omitted = summaries.reduce((n, x) => n + x.summary.retainedOmitted, 0);
  const timeline = [
    ...request.timeline.map((t) => ({ t, database: undefined as string | undefined })),
    ...view.others.flatMap((o) => (o.request?.timeline ?? []).map((t) => ({ t, database: o.cell }))),
  ]
    .sort((a, b) => a.t.atMs - b.t.atMs)
    .map(({ t, database }) => ({ at: iso(t.atMs), event: t.event, ...(t.detail !== undefined ? { detail: t.detail } : {}), ...(database !== undefined ? { database } : {}) }));
  return {
    requestId: request.requestId,
    state: view.state,
    graceEndsAt: isoOrNull(request.graceEndsAtMs),
    dueAt: isoOrNull(request.dueAtMs),
    timeline,
    retained,
    ...(omitted > 0 ? { retainedOmitted: omitted } : {}),
    fullyGoneBy: isoOrNull(view.fullyGoneByMs),
    fullyGoneByUnknown: view.fullyGoneByUnknown,
    // The request of record's own ERASURE_COMPLETE waits for every database's (purge/completion.ts).
    erasureCompleteAt: view.state === "PURGED" ? goneByFacts(snap).erasureCompleteAt : null,
    cells: view.cells.map((c) => ({
      database: c.cell,
      state: c.state,
      fullyGoneBy: isoOrNull(c.fullyGoneByMs),
      fullyGoneByUnknown: c.state === null ? null : c.fullyGoneByUnknown,
      erasureComplete: c.erasureComplete,
      underHold: c.underHold,
      blockedReason: c.blockedReason,
      awaitingRecord: c.awaitingRecord,
    })),
    ...(facts ? { staff: acrossCells(facts, view) } : {}),
  };
}

/** Staff facts of a request across databases: blocked where any database is, and what holds keep in every one. */
function acrossCells(facts: ReturnType<typeof staffFacts>, view: RecordView): ReturnType<typeof staffFacts> {
  const parts = [facts, ...view.others.filter((o) => o.snap.exists).map((o) => staffFacts(o.snap))];
  const held = parts.flatMap((p) => (p.retainedUnderHold ? [p.retainedUnderHold] : []));
  return {
    ...facts,
    blockedReason: parts.map((p) => p.blockedReason).find((r) => r !== null) ?? null,
    retainedUnderHold: held.length === 0 ? null : { count: held.reduce((n, h) => n + h.count, 0), holds: [...new Map(held.flatMap((h) => h.holds).map((h) => [`${h.holdId}:${h.reasonCode}`, h])).values()] },
  };
}
