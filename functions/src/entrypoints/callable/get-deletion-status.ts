import type { z } from "zod";
import { GetDeletionStatusInput, GetDeletionStatusOutput } from "../../contract/requests";
import { describeRetained } from "../../requests/rules/status";
import { permissionDenied } from "../../kernel/errors";
import { policy } from "../../platform/registry";
import { currentStatusSummary, findRequest, goneByFacts, recordView, staffFacts, type RecordView } from "../../requests/index";
import { inCell } from "../../platform/firestore";
import { requestOwner } from "../../requests/rules/requests";
import { staffNames } from "../../platform/people";
import { settings } from "../../platform/settings";
import { callable, type Caller } from "./shared";

export { GetDeletionStatusInput };

const iso = (ms: number) => new Date(ms).toISOString();
/** A request's grace and due dates: null while a tenant's closure awaits its approval. */
const isoOrNull = (ms: number | null) => (ms === null ? null : iso(ms));

export interface StatusEnv {
  nowMs: number;
  refreshMs: number;
}

/**
 * The owner (or compliance) sees the request's timeline and what will be kept, and why. What is kept comes
 * from the request's status summary (planned at most every RETENTION_STATUS_REFRESH_MINUTES, or when holds
 * change), never from a plan per call. The subject is told "retained for a legal obligation" for anything a
 * hold keeps; compliance sees the hold's reason and the staff who acted by name. Both see the date by which the last copy is gone (or why there is
 * none yet) and when ERASURE_COMPLETE was recorded. Without a requestId it answers for the caller's latest request.
 */
export async function getDeletionStatusHandler(
  input: z.infer<typeof GetDeletionStatusInput>,
  caller: Caller,
  env: StatusEnv = { nowMs: Date.now(), refreshMs: settings.statusRefreshMs() },
): Promise<z.infer<typeof GetDeletionStatusOutput>> {
  const { request, snap } = await findRequest(input.requestId !== undefined ? { requestId: input.requestId } : { latestOf: caller.uid });
  const staff = caller.roles.includes("compliance");
  if (requestOwner(request) !== caller.uid && !staff) {
    throw permissionDenied("NOT_OWNER", "Only the subject or compliance staff may read this request.");
  }
  const view = await recordView(request.requestId, snap.data() ?? {});
  const audience = staff ? "staff" : "subject";
  const facts = staff ? staffFacts(snap) : null;
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
      // Staff also see whose request it is and why it is blocked or what holds retain, and the staff who opened or
      // approved it by name; a subject never does.
      ...(facts ? { staff: { ...facts, people: await staffNames([facts.requestedBy, request.approvedBy]) } } : {}),
    };
  }
  // A request across several governed databases: its state and date derived from every database's part
  // (requests/cells.ts#recordView), what is kept from each database's own status summary, each database's events.
  const summaries = await Promise.all(
    view.cells.map(async (c) => ({ cell: c.cell, summary: await inCell(c.cell, () => currentStatusSummary(request, env.nowMs, env.refreshMs)) })),
  );
  const retained = summaries.flatMap(({ cell, summary }) => describeRetained(summary.retained, policy(), audience).map((r) => ({ ...r, database: cell })));
  const omitted = summaries.reduce((n, x) => n + x.summary.retainedOmitted, 0);
  const timeline = [
    ...request.timeline.map((t) => ({ at: t.atMs, event: t.event, detail: t.detail, database: undefined as string | undefined })),
    ...view.others.flatMap((o) => (o.request?.timeline ?? []).map((t) => ({ at: t.atMs, event: t.event, detail: t.detail, database: o.cell }))),
  ]
    .sort((a, b) => a.at - b.at)
    .map((t) => ({ at: iso(t.at), event: t.event, ...(t.detail !== undefined ? { detail: t.detail } : {}), ...(t.database !== undefined ? { database: t.database } : {}) }));
  const erasureCompleteAt = view.state === "PURGED" ? goneByFacts(snap).erasureCompleteAt : null;
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
    erasureCompleteAt,
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
    ...(facts ? { staff: { ...acrossCells(facts, view), people: await staffNames([facts.requestedBy, request.approvedBy]) } } : {}),
  };
}

/** Staff facts of a request across cells: blocked where any database is, and what holds keep in every database. */
function acrossCells(facts: ReturnType<typeof staffFacts>, view: RecordView): ReturnType<typeof staffFacts> {
  const parts = [facts, ...view.others.filter((o) => o.snap.exists).map((o) => staffFacts(o.snap))];
  const held = parts.flatMap((p) => (p.retainedUnderHold ? [p.retainedUnderHold] : []));
  return {
    ...facts,
    blockedReason: parts.map((p) => p.blockedReason).find((r) => r !== null) ?? null,
    retainedUnderHold: held.length === 0 ? null : { count: held.reduce((n, h) => n + h.count, 0), holds: [...new Map(held.flatMap((h) => h.holds).map((h) => [`${h.holdId}:${h.reasonCode}`, h])).values()] },
  };
}

/** User-facing: App Check is required where enforcement is on. */
export const getDeletionStatus = callable("getDeletionStatus", GetDeletionStatusInput, (input, caller) => getDeletionStatusHandler(input, caller), { appCheck: true });
