import type { DocumentSnapshot } from "firebase-admin/firestore";
import { policy } from "../platform/registry";
import { factsOfGroup, groupStaffFacts, groupView, readGroup } from "./group";
import { goneByFacts, staffFacts } from "./queries";
import type { DeletionRequest } from "./rules/requests";
import { describeRetained, type StatusAudience } from "./rules/status";
import { clockView } from "./rules/legal-clock";
import { subjectView } from "./rules/subject-view";
import { currentStatusSummary } from "./status";
import { cellsOfRecord } from "./cells";
import { statusView as cellStatusView, type CellView } from "./view";
import { notifiedRequestIds, processorViews, type ProcessorView } from "../processors/index";

const iso = (ms: number) => new Date(ms).toISOString();
/** A request's grace and due dates: null while a tenant's closure awaits its approval. */
const isoOrNull = (ms: number | null) => (ms === null ? null : iso(ms));

export interface StatusEnv {
  nowMs: number;
  refreshMs: number;
}

/**
 * A request's status as its reader is told it (getDeletionStatus, `retention requests show`): state, dates,
 * timeline, what is retained and why (from each request's status summary, never a plan per call), "fully gone by",
 * and for staff whose request it is and why it is blocked or retained. A member of a request group answers for the
 * whole group, under the group's id (its lead's request id): its state and dates derived from its members'
 * (requests/rules/group.ts), their timelines merged (each entry naming its scope), everything they keep, and
 * `group` listing each member. The subject is told "retained for a legal obligation" for anything a hold keeps.
 */
export async function statusView(request: DeletionRequest, snap: DocumentSnapshot, audience: StatusAudience, env: StatusEnv): Promise<StatusView> {
  const view = await requestView(request, snap, audience, env);
  // The processors each request (a group: each member) notified when it ended PURGED (docs/decisions/0039-processors.md);
  // a request or member not PURGED yet has none to read.
  const processors = await processorViews(notifiedRequestIds(view.group ? view.group.requests : [request]), env.nowMs);
  return processors.length > 0 ? { ...view, processors } : view;
}

async function requestView(request: DeletionRequest, snap: DocumentSnapshot, audience: StatusAudience, env: StatusEnv): Promise<StatusView> {
  // A request of record across several governed databases (not a group member): each database's part
  // (requests/view.ts), its state and date derived from them (docs/decisions/0036-several-databases.md).
  if (request.groupId === undefined && cellsOfRecord(snap.data()).length > 0) {
    const { staff, ...view } = await cellStatusView(request, snap, audience, env);
    return { ...view, legalClock: clockView([request], env.nowMs, audience), ...(staff ? { staff: { ...staff, subjectRef: subjectView(staff.subject) } } : {}) };
  }
  return groupStatusView(request, snap, audience, env);
}

type GroupStatusView = Awaited<ReturnType<typeof groupStatusView>>;

/** A status as getDeletionStatus and `retention requests show` report it: a group's, or one database's or several's. */
export type StatusView = Omit<GroupStatusView, "timeline" | "retained"> & {
  timeline: (GroupStatusView["timeline"][number] & { database?: string })[];
  /** The legal clock the request runs on (a group's: its member due first); null when it runs on none. */
  legalClock: ReturnType<typeof clockView>;
  retained: (GroupStatusView["retained"][number] & { database?: string })[];
  /** A request across several governed databases: each database's part. */
  cells?: CellView[];
  processors?: ProcessorView[];
};


async function groupStatusView(request: DeletionRequest, snap: DocumentSnapshot, audience: StatusAudience, env: StatusEnv) {
  const members = await readGroup(request, snap);
  const summaries = await Promise.all(members.map((m) => currentStatusSummary(m.request, env.nowMs, env.refreshMs)));
  const grouped = members.length > 1;
  const facts = grouped ? factsOfGroup(members) : null;
  const staff = audience === "staff" ? (grouped ? groupStaffFacts(members) : staffFacts(snap)) : null;
  const timeline = members
    .flatMap((m) => m.request.timeline.map((t) => ({ at: iso(t.atMs), event: t.event, ...(t.detail !== undefined ? { detail: t.detail } : {}), ...(grouped ? { scope: m.request.subject.tenantId } : {}) })))
    .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  const omitted = summaries.reduce((n, s) => n + s.retainedOmitted, 0);
  return {
    requestId: grouped ? members[0]!.request.requestId : request.requestId,
    state: facts?.state ?? request.state,
    graceEndsAt: isoOrNull(facts ? facts.graceEndsAtMs : request.graceEndsAtMs),
    dueAt: isoOrNull(facts ? facts.dueAtMs : request.dueAtMs),
    timeline,
    retained: describeRetained(
      summaries.flatMap((s) => s.retained),
      policy(),
      audience,
    ),
    ...(omitted > 0 ? { retainedOmitted: omitted } : {}),
    ...(facts ? { fullyGoneBy: isoOrNull(facts.fullyGoneByMs), fullyGoneByUnknown: facts.goneByUnknown, erasureCompleteAt: isoOrNull(facts.erasureCompleteAtMs) } : goneByFacts(snap)),
    legalClock: clockView(
      members.map((m) => m.request),
      env.nowMs,
      audience,
    ),
    ...(grouped ? { group: groupView(members) } : {}),
    ...(staff ? { staff: { ...staff, subjectRef: subjectView(staff.subject) } } : {}),
  };
}
