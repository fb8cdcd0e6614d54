import { FieldValue, type DocumentData } from "firebase-admin/firestore";
import { EVIDENCE_TX, openEvidence } from "../evidence/index";
import type { Actor } from "../evidence/rules";
import { hashCanonical } from "../kernel/canonical";
import { notFound } from "../kernel/errors";
import { fillTemplate } from "../kernel/paths";
import { COLLECTIONS, db, inCell } from "../platform/firestore";
import { toMs, toTimestamp } from "../platform/governed-doc";
import { log } from "../platform/logs";
import { policy } from "../platform/registry";
import type { Subject } from "../plan/rules";
import { clockDueAtMs, groupExtension, lawFor, startClock, type LegalClock } from "./rules/legal-clock";
import { GROUP_MAX_SCOPES } from "./rules/group";
import { parseRequestState } from "./rules/requests";
import { cellsOfRecord } from "./rules/cells";

/**
 * Legal clocks on requests (docs/decisions/0040-legal-clocks-and-access.md): the clock each new user request starts
 * on, how a clock is stored on a request (`legalClock`), and staff's one extension. The rules are in
 * rules/legal-clock.ts.
 */

const requestsCol = () => db().collection(COLLECTIONS.deletionRequests);

/**
 * The legal clock of each new request, in the order of `subjects`: for a user, the law the registry's `legalClocks`
 * assigns (its field rules read now, one point read per rule, outside the opening transaction: which law applies is a
 * fact about the subject at the moment they ask, and a write racing it changes which law applies no more than a
 * second earlier would); null for a scope's closure (a business act on no person's request) and under a registry
 * without legal clocks.
 */
export async function clocksForNewRequests(subjects: readonly Subject[], nowMs: number): Promise<(LegalClock | null)[]> {
  const clocks = policy().registry.legalClocks;
  if (!clocks) return subjects.map(() => null);
  const fieldValues = new Map<string, Map<number, unknown>>();
  const valuesOf = async (uid: string): Promise<Map<number, unknown>> => {
    const known = fieldValues.get(uid);
    if (known) return known;
    const values = new Map<number, unknown>();
    for (const [i, rule] of clocks.rules.entries()) {
      if (rule.via !== "field") continue;
      const snap = await db().doc(fillTemplate(rule.path, { uid })).get();
      values.set(i, snap.exists ? snap.get(rule.field) : undefined);
    }
    fieldValues.set(uid, values);
    return values;
  };
  const out: (LegalClock | null)[] = [];
  for (const s of subjects) {
    if (s.type !== "user") {
      out.push(null);
      continue;
    }
    out.push(startClock(lawFor(clocks, { scope: s.tenantId, fieldValues: await valuesOf(s.uid) }), nowMs));
  }
  return out;
}

/** How a request stores its legal clock (`legalClock`). */
export function legalClockToFirestore(c: LegalClock): Record<string, unknown> {
  return {
    law: c.law,
    name: c.name,
    startedAt: toTimestamp(c.startedAtMs),
    originalDueAt: toTimestamp(c.originalDueAtMs),
    limit: c.limitMs === null ? null : toTimestamp(c.limitMs),
    extension: c.extension === null ? null : { dueAt: toTimestamp(c.extension.dueAtMs), at: toTimestamp(c.extension.atMs), by: c.extension.by, reason: c.extension.reason },
  };
}

/** A stored request's legal clock; null when it has none (opened under a registry without legal clocks, or a closure). */
export function legalClockFromFirestore(data: DocumentData | undefined): LegalClock | null {
  const c = data?.legalClock as Record<string, unknown> | undefined | null;
  if (!c || typeof c.law !== "string") return null;
  const ext = c.extension as Record<string, unknown> | null | undefined;
  return {
    law: c.law,
    name: typeof c.name === "string" ? c.name : c.law,
    startedAtMs: toMs(c.startedAt) ?? 0,
    originalDueAtMs: toMs(c.originalDueAt) ?? 0,
    limitMs: toMs(c.limit),
    extension: ext ? { dueAtMs: toMs(ext.dueAt) ?? 0, atMs: toMs(ext.at) ?? 0, by: typeof ext.by === "string" ? ext.by : "", reason: typeof ext.reason === "string" ? ext.reason : "" } : null,
  };
}

export interface ExtendDeadlineInput {
  requestId: string;
  reason: string | undefined;
  /** The new deadline; absent: the law's limit. */
  untilMs?: number;
  actor: Actor;
  nowMs: number;
}

export interface ExtendedDeadline {
  requestId: string;
  /** Every request extended: the one named, or every member of its request group. */
  extended: { requestId: string; law: string; originalDueAtMs: number; dueAtMs: number }[];
}

/**
 * Staff extend a request's legal deadline, once, within its law's limit, with a written reason (rules/legal-clock.ts#
 * extensionDecision says when it is refused; a refusal writes nothing). A member of a request group extends the whole
 * group (its members read by the group's id): every member still owed an answer, each within its own law's limit, or
 * none; a member already answered keeps its answer (rules/legal-clock.ts#groupExtension). One transaction moves
 * each request's `dueAt` and records the extension on its clock and timeline, with DEADLINE_EXTENDED evidence per
 * member (the reason's text and its hash, the law, both deadlines) in the lead's chain. Then each other governed
 * database's copy of the request (its cell request) follows; a cell request opened later copies the record as it is.
 */
export async function extendRequestDeadline(input: ExtendDeadlineInput): Promise<ExtendedDeadline> {
  const ref = requestsCol().doc(input.requestId);
  const outcome = await db().runTransaction(async (tx) => {
    const snap = await tx.get(ref);
    if (!snap.exists || typeof snap.get("cellOf") === "string") throw notFound("REQUEST_NOT_FOUND", "No such deletion request.");
    const groupId = snap.get("groupId") as unknown;
    // A group's members by its id (the lead's), as every other reader of a group finds them; cell requests of other
    // databases follow their record below.
    const members =
      typeof groupId === "string"
        ? (await tx.get(requestsCol().where("groupId", "==", groupId).limit(GROUP_MAX_SCOPES))).docs.filter((d) => typeof d.get("cellOf") !== "string")
        : [snap];
    const decided = groupExtension(
      members.map((m) => ({ snap: m, state: parseRequestState(m.get("state")), legalClock: legalClockFromFirestore(m.data()) })),
      { reason: input.reason, untilMs: input.untilMs },
    ).map(({ member, dueAtMs }) => ({ snap: member.snap, clock: member.legalClock!, dueAtMs }));
    const reason = (input.reason ?? "").trim();
    const lead = typeof groupId === "string" ? groupId : input.requestId;
    const evidence = await openEvidence(tx, lead);
    for (const d of decided) {
      const extended: LegalClock = { ...d.clock, extension: { dueAtMs: d.dueAtMs, atMs: input.nowMs, by: input.actor.id, reason } };
      tx.update(d.snap.ref, {
        dueAt: toTimestamp(d.dueAtMs),
        legalClock: legalClockToFirestore(extended),
        timeline: FieldValue.arrayUnion({ at: toTimestamp(input.nowMs), event: "DEADLINE_EXTENDED", detail: `${d.clock.name}: due ${new Date(d.dueAtMs).toISOString()} (was ${new Date(clockDueAtMs(d.clock)).toISOString()})` }),
      });
      evidence.append({
        action: "DEADLINE_EXTENDED",
        actor: input.actor,
        decision: { reason: "LEGAL_EXTENSION", law: d.clock.law },
        policyVersion: String(d.snap.get("policyVersion") ?? policy().version),
        atMs: input.nowMs,
        requestId: d.snap.id,
        detail: {
          law: d.clock.law,
          originalDueAt: new Date(d.clock.originalDueAtMs).toISOString(),
          dueAt: new Date(d.dueAtMs).toISOString(),
          limit: d.clock.limitMs === null ? null : new Date(d.clock.limitMs).toISOString(),
          // Staff's written reason, as the law asks it be given: its text, and its hash for checking a copy against.
          reasonText: reason,
          reasonHash: hashCanonical({ extensionReason: reason }),
        },
      });
    }
    return { decided: decided.map((d) => ({ requestId: d.snap.id, law: d.clock.law, originalDueAtMs: d.clock.originalDueAtMs, dueAtMs: d.dueAtMs, cells: cellsOfRecord(d.snap.data()) })) };
  }, EVIDENCE_TX);
  for (const d of outcome.decided) {
    log.info("deadline.extended", { requestId: d.requestId, law: d.law });
    for (const cell of d.cells) await followExtension(cell, d.requestId);
  }
  return { requestId: input.requestId, extended: outcome.decided.map(({ cells: _c, ...d }) => d) };
}

/** A cell request takes its record's extended deadline and clock (idempotent: a copy already extended is left). */
async function followExtension(cell: string, requestId: string): Promise<void> {
  const record = await requestsCol().doc(requestId).get();
  const clock = legalClockFromFirestore(record.data());
  if (!clock?.extension) return;
  await inCell(cell, () =>
    db().runTransaction(async (tx) => {
      const ref = requestsCol().doc(requestId);
      const snap = await tx.get(ref);
      if (!snap.exists || legalClockFromFirestore(snap.data())?.extension) return;
      tx.update(ref, { dueAt: toTimestamp(clock.extension!.dueAtMs), legalClock: legalClockToFirestore(clock) });
    }),
  );
}
