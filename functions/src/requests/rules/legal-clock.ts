import { DomainError, preconditionFailed } from "../../kernel/errors";
import { DAY_MS } from "../../kernel/policy";
import type { LegalClockLaw, LegalClocks, LegalPeriod } from "../../kernel/policy-schema";
import type { RequestState } from "../../kernel/request-states";

/**
 * Legal clocks, pure (docs/decisions/0040-legal-clocks-and-access.md): which law a subject's request runs under, its
 * deadline from the moment it is opened, the one extension staff may grant with a written reason, and whether the
 * request was answered in time. The registry's `legalClocks` names the laws and which applies to whom.
 */


/**
 * `startMs` plus a period. Days are 24-hour days. Months are calendar months in UTC, the way the EU counts a period
 * of months (Regulation 1182/71, Art. 3(2)(c)): the same day of the month `months` later, or that month's last day when
 * it has no such day (31 January + one month = 28 or 29 February), at the same time of day.
 */
export function addPeriod(startMs: number, period: LegalPeriod): number {
  if ("days" in period) return startMs + period.days * DAY_MS;
  const d = new Date(startMs);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth() + period.months;
  const lastDay = new Date(Date.UTC(y, m + 1, 0)).getUTCDate();
  const day = Math.min(d.getUTCDate(), lastDay);
  return Date.UTC(y, m, day, d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds());
}

/** A period in words: `1 month`, `45 days`. */
export const periodText = (p: LegalPeriod): string => ("days" in p ? `${p.days} day${p.days === 1 ? "" : "s"}` : `${p.months} month${p.months === 1 ? "" : "s"}`);

/** What a rule of the registry reads about a user: the scope of the request, and the field values its `field` rules name. */
export interface LegalClockFacts {
  /** The request's scope ("" in an app without scopes, or for a tenant's closure: a scope rule then never matches). */
  scope: string;
  /** Per `field` rule, by its index in `rules`: the value the document holds (undefined: no document, or no such field). */
  fieldValues: ReadonlyMap<number, unknown>;
}

/** A field's value as a rule compares it: a string or a number as text; anything else matches no value. */
const fieldText = (v: unknown): string => (typeof v === "string" ? v : typeof v === "number" ? String(v) : "\u0000");

/**
 * The law a user's request runs under: the first rule that matches (a scope rule: the request's scope is listed; a
 * field rule: the document's field holds one of its values, compared as text), else the registry's default.
 */
export function lawFor(clocks: LegalClocks, facts: LegalClockFacts): LegalClockLaw {
  const byId = new Map(clocks.laws.map((l) => [l.id, l]));
  for (const [i, rule] of clocks.rules.entries()) {
    const matches = rule.via === "scope" ? facts.scope !== "" && rule.scopes.includes(facts.scope) : rule.values.includes(fieldText(facts.fieldValues.get(i)));
    if (matches) return byId.get(rule.law)!;
  }
  return byId.get(clocks.default)!;
}

/** A request's legal clock as it is stored on the request (`legalClock`), in domain form (times as epoch ms). */
export interface LegalClock {
  law: string;
  /** The law's name, as the registry gave it when the request was opened. */
  name: string;
  /** When the clock started: the request's opening. */
  startedAtMs: number;
  /** The deadline the law sets, before any extension. */
  originalDueAtMs: number;
  /** The latest the one extension may reach (the law's period plus its extension); null: the law allows none. */
  limitMs: number | null;
  /** The extension, once granted. */
  extension: { dueAtMs: number; atMs: number; by: string; reason: string } | null;
}

/** The clock a request opened at `startedAtMs` runs on under `law`. */
export function startClock(law: LegalClockLaw, startedAtMs: number): LegalClock {
  const originalDueAtMs = addPeriod(startedAtMs, law.period);
  return {
    law: law.id,
    name: law.name,
    startedAtMs,
    originalDueAtMs,
    limitMs: law.extension ? addPeriod(originalDueAtMs, law.extension) : null,
    extension: null,
  };
}

/** The deadline a clock sets now: the extension's, else the law's. */
export const clockDueAtMs = (c: LegalClock): number => c.extension?.dueAtMs ?? c.originalDueAtMs;

/** The shortest reason staff may give for an extension: a written reason, not a word. */
export const EXTENSION_REASON_MIN = 10;

/** Requests that may still be extended: not answered, not withdrawn. */
const EXTENDABLE_STATES: readonly RequestState[] = ["AWAITING_APPROVAL", "PENDING", "PROCESSING", "BLOCKED"];

/**
 * Whether staff may extend a request's deadline, and to when: once, with a written reason, within the law's limit.
 * `untilMs` absent: to the limit. Errors (all change nothing):
 * - EXTENSION_REASON_REQUIRED (invalid-argument): no reason, or fewer than EXTENSION_REASON_MIN characters;
 * - NO_LEGAL_CLOCK (failed-precondition): the request runs on no legal clock (opened under a registry without one);
 * - NOT_EXTENDABLE (failed-precondition): the law allows no extension, or the request is answered or withdrawn;
 * - ALREADY_EXTENDED (failed-precondition): the one extension was granted;
 * - BEYOND_LEGAL_LIMIT (failed-precondition): `untilMs` is past the law's limit;
 * - EXTENSION_NOT_LATER (failed-precondition): `untilMs` is not after the current deadline.
 */
export function extensionDecision(
  req: { state: RequestState; legalClock: LegalClock | null },
  input: { reason: string | undefined; untilMs?: number | undefined },
): { dueAtMs: number } {
  const reason = (input.reason ?? "").trim();
  if (reason.length < EXTENSION_REASON_MIN) {
    throw new DomainError("invalid-argument", "EXTENSION_REASON_REQUIRED", `An extension needs a written reason (at least ${EXTENSION_REASON_MIN} characters); it is recorded as evidence.`);
  }
  const clock = req.legalClock;
  if (clock === null) throw preconditionFailed("NO_LEGAL_CLOCK", "This request runs on no legal clock: the registry in force when it was opened had none.");
  if (clock.limitMs === null) throw preconditionFailed("NOT_EXTENDABLE", `${clock.name} allows no extension.`, { law: clock.law });
  if (!EXTENDABLE_STATES.includes(req.state)) throw preconditionFailed("NOT_EXTENDABLE", `A ${req.state} request is answered or withdrawn: its deadline no longer runs.`, { state: req.state });
  if (clock.extension !== null) {
    throw preconditionFailed("ALREADY_EXTENDED", `The deadline was already extended once, to ${new Date(clock.extension.dueAtMs).toISOString()}.`, { dueAt: new Date(clock.extension.dueAtMs).toISOString() });
  }
  const dueAtMs = input.untilMs ?? clock.limitMs;
  if (dueAtMs > clock.limitMs) {
    throw preconditionFailed("BEYOND_LEGAL_LIMIT", `${clock.name} allows an extension to ${new Date(clock.limitMs).toISOString()} at the latest.`, { limit: new Date(clock.limitMs).toISOString() });
  }
  if (dueAtMs <= clock.originalDueAtMs) {
    throw preconditionFailed("EXTENSION_NOT_LATER", `An extension moves the deadline later than ${new Date(clock.originalDueAtMs).toISOString()}.`, { dueAt: new Date(clock.originalDueAtMs).toISOString() });
  }
  return { dueAtMs };
}

/**
 * A request group's extension (the group is one person's request): every member still owed an answer is extended,
 * each within its own law's limit, or none is (any member's refusal refuses the whole group); a member already
 * answered keeps its answer and its deadline. Refused as extensionDecision refuses one request when no member is
 * still owed one.
 */
export function groupExtension<M extends { state: RequestState; legalClock: LegalClock | null }>(
  members: readonly M[],
  input: { reason: string | undefined; untilMs?: number | undefined },
): { member: M; dueAtMs: number }[] {
  const open = members.filter((m) => EXTENDABLE_STATES.includes(m.state));
  if (open.length === 0) {
    // Every member answered or withdrawn: the first one's refusal says why (a missing reason first, as for one request).
    extensionDecision(members[0] ?? { state: "CANCELLED", legalClock: null }, input);
    throw preconditionFailed("NOT_EXTENDABLE", "Every part of this request is answered or withdrawn: its deadline no longer runs.");
  }
  return open.map((member) => ({ member, ...extensionDecision(member, input) }));
}

/** The states in which a request has been answered: erased, or erased but for what a hold keeps (the subject is told why). */
export const ANSWERED_STATES: readonly RequestState[] = ["PURGED", "RETAINED_UNDER_HOLD"];

/** When a request was answered: its first PURGED or RETAINED_UNDER_HOLD timeline event; null while unanswered. */
export function answeredAtMs(timeline: readonly { atMs: number; event: string }[]): number | null {
  const times = timeline.filter((t) => (ANSWERED_STATES as readonly string[]).includes(t.event)).map((t) => t.atMs);
  return times.length > 0 ? Math.min(...times) : null;
}

/**
 * Where a request stands against its deadline: `open` (unanswered, deadline ahead), `overdue` (unanswered, deadline
 * passed: a breach the audit reports), `on-time`, `late` (answered after the deadline: a breach too), or `none` (no
 * deadline: a closure awaiting approval, a withdrawn request).
 */
export type DeadlineOutcome = "open" | "overdue" | "on-time" | "late" | "none";

export function deadlineOutcome(r: { state: string | null; dueAtMs: number | null; answeredAtMs: number | null }, nowMs: number): DeadlineOutcome {
  if (r.dueAtMs === null) return "none";
  if (r.answeredAtMs !== null) return r.answeredAtMs <= r.dueAtMs ? "on-time" : "late";
  if (r.state === "CANCELLED" || r.state === "CANCELLING") return "none";
  return r.dueAtMs < nowMs ? "overdue" : "open";
}

/** Whole days left until a deadline (negative once past), rounded down: what the console shows and sorts by. */
export const daysLeft = (dueAtMs: number, nowMs: number): number => Math.floor((dueAtMs - nowMs) / DAY_MS);

/** A request's legal clock as a status reports it (getDeletionStatus, `retention requests show`, the console). */
export interface ClockView {
  law: string;
  name: string;
  startedAt: string;
  /** The deadline the law set at the opening. */
  originalDueAt: string;
  /** The deadline now: the extension's, else the original. */
  dueAt: string;
  /** The latest an extension may reach; null: the law allows none. */
  limit: string | null;
  /** Whole days left (negative once past); null once answered or withdrawn. */
  daysLeft: number | null;
  outcome: DeadlineOutcome;
  extension: { dueAt: string; at: string; reason: string; by?: string } | null;
}

/**
 * The clock a status shows. Of a request group's members, the one due first (the group is answered when its last
 * member is, so its earliest deadline is the one that can be missed first). Staff also see who extended it.
 */
export function clockView(
  members: readonly { state: RequestState; legalClock?: LegalClock | undefined; timeline: readonly { atMs: number; event: string }[] }[],
  nowMs: number,
  audience: "subject" | "staff",
): ClockView | null {
  const timed = members.filter((m): m is typeof m & { legalClock: LegalClock } => m.legalClock !== undefined);
  if (timed.length === 0) return null;
  const m = [...timed].sort((a, b) => clockDueAtMs(a.legalClock) - clockDueAtMs(b.legalClock))[0]!;
  const c = m.legalClock;
  const iso = (ms: number) => new Date(ms).toISOString();
  const dueAtMs = clockDueAtMs(c);
  // A group is answered when its last member is.
  const answers = members.map((x) => answeredAtMs(x.timeline));
  const answered = answers.every((a): a is number => a !== null) ? Math.max(...answers) : null;
  const outcome = deadlineOutcome({ state: m.state, dueAtMs, answeredAtMs: answered }, nowMs);
  return {
    law: c.law,
    name: c.name,
    startedAt: iso(c.startedAtMs),
    originalDueAt: iso(c.originalDueAtMs),
    dueAt: iso(dueAtMs),
    limit: c.limitMs === null ? null : iso(c.limitMs),
    daysLeft: outcome === "open" || outcome === "overdue" ? daysLeft(dueAtMs, nowMs) : null,
    outcome,
    extension: c.extension === null ? null : { dueAt: iso(c.extension.dueAtMs), at: iso(c.extension.atMs), reason: c.extension.reason, ...(audience === "staff" ? { by: c.extension.by } : {}) },
  };
}
