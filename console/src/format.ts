import { refusalReason, type CallableOutput } from "@atlasmart/retention-client";
import { createElement, Fragment, useEffect, useState, type ReactNode } from "react";

/** A date-time for people, in UTC (compliance works across time zones; evidence is in UTC). */
export function when(iso: string | null | undefined): string {
  if (!iso) return "-";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : `${d.toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

/**
 * "in 3 days" / "2 days overdue": the due date counting down. No due date (a tenant's closure before its second
 * approval starts its grace): "awaiting approval".
 */
export function countdown(iso: string | null, nowMs: number = Date.now()): string {
  if (iso === null) return "awaiting approval";
  const ms = Date.parse(iso) - nowMs;
  const abs = Math.abs(ms);
  const days = Math.floor(abs / 86_400_000);
  const hours = Math.floor((abs % 86_400_000) / 3_600_000);
  const span = days > 0 ? `${days} d ${hours} h` : `${hours} h`;
  return ms >= 0 ? `due in ${span}` : `${span} overdue`;
}

/**
 * Whose data a deletion request erases, for people, in the registry's words: a user (in their scope, such as a
 * tenant, where the app has one and the user is in one) or a whole scope. `scope`: the scope kind's name, or null.
 */
export function subjectLabel(s: CallableOutput<"listDeletionRequests">["items"][number]["subject"], scope: string | null): string {
  const kind = scope ?? "scope";
  if (s.type !== "user") return `${kind} ${s.tenantId}`;
  return s.tenantId ? `${s.uid} (${kind} ${s.tenantId})` : s.uid;
}

/** Every ISO time in a sentence (the evidence summary's), written as `when` writes it: one format on a page. */
export function humanTimes(text: string): string {
  return text.replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})/g, (iso) => when(iso));
}

/** The refusals a person meets in the console, in words (the code stays on screen as a detail). */
const REFUSALS: Record<string, string> = {
  UNAUTHENTICATED: "Your sign-in has ended. Sign in again.",
  APP_CHECK_REQUIRED: "This app could not be verified. Reload the page.",
  NOT_COMPLIANCE: "Only compliance officers may do this.",
  NOT_RETENTION_ADMIN: "Only retention administrators may do this.",
  NOT_STAFF: "Only staff may do this.",
  INVALID_CURSOR: "The list changed while you were paging through it. Reload it.",
  INVALID_ARGUMENT: "Something entered is not in the form the service accepts.",
  NOT_GOVERNED_PATH: "No retention policy covers this collection, so there is nothing a hold could protect here.",
  INVALID_TARGET_PATH: "This is not the path of a document.",
  TARGET_NOT_FOUND: "There is no document at this path. Check its collection names and ids.",
  HOLD_NOT_ALLOWED_FOR_CLASS: "Documents of this kind cannot be put under a hold.",
  UNKNOWN_REASON_CODE: "This reason is not in the current retention policy.",
  HOLD_NOT_FOUND: "There is no such hold.",
  HOLD_NOT_ACTIVE: "This hold has already been released.",
  TWO_PERSON_RULE: "A second officer must do this: the same person may not both place (or ask) and release (or approve).",
  RELEASE_BEFORE_RELEASE_AFTER: "This hold may not be released before its release-after date.",
  STAFF_NOT_FOUND: "No staff member has this email address.",
  REQUEST_NOT_FOUND: "There is no such deletion request.",
  SUBJECT_NOT_FOUND: "Nothing of this subject is left to plan.",
  BRAKE_RUN_NOT_FOUND: "This held-back run no longer exists.",
  BRAKE_RUN_USED: "This deletion set has already run.",
  ALREADY_APPROVED: "This deletion set is already approved.",
};

/** What a failed call says to a person: a sentence in words, and the refusal's code (null for other failures). */
export function describeProblem(err: unknown): { text: string; code: string | null } {
  const code = refusalReason(err);
  const message = (err instanceof Error ? err.message : String(err)).replace(/\s*\[\d{3}\]\s*$/, "");
  return { text: (code !== null ? REFUSALS[code] : undefined) ?? message, code };
}

/** A failed call as one line: the words, then the code. */
export function problem(err: unknown): string {
  const { text, code } = describeProblem(err);
  return code ? `${text} (code ${code})` : text;
}

/** A failed call on screen: the words for a person, and the code, smaller, for whoever they ask. */
export function Problem({ error, role = "alert" }: { error: unknown; role?: "alert" | "status" }): ReactNode {
  const { text, code } = describeProblem(error);
  return createElement("p", { role, className: "error", "data-testid": "problem" }, text, code ? createElement("span", { className: "code-detail" }, ` Code: ${code}`) : null);
}

type People = Record<string, { name: string | null; email: string | null }>;

/** A staff member by name (else email), where the record keeps their uid; the system and unknown uids as they are. */
export function personName(people: People | undefined, uid: string | null | undefined): string {
  if (!uid) return "-";
  const p = people?.[uid];
  return p?.name ?? p?.email ?? uid;
}

/** Replaces the staff uids a sentence names (the evidence summary's "approved by r-3001") by their names. */
export function namePeople(text: string, people: People | undefined): string {
  let out = text;
  for (const uid of Object.keys(people ?? {})) {
    const escaped = uid.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    out = out.replace(new RegExp(`(?<![\\w-])${escaped}(?![\\w-])`, "g"), personName(people, uid));
  }
  return out;
}

/** A path that wraps only at its slashes: a break opportunity after each one, none inside a segment. */
export function PathText({ path }: { path: string }): ReactNode {
  const parts = path.split("/");
  return createElement(
    "code",
    { className: "path" },
    // A segment never breaks (not even at its hyphens, as in t-acme); a break may come after each slash.
    parts.map((seg, i) => createElement(Fragment, { key: i }, createElement("span", { className: "seg" }, i < parts.length - 1 ? `${seg}/` : seg), i < parts.length - 1 ? createElement("wbr") : null)),
  );
}

/** The current time, refreshed every `everyMs`: countdowns keep counting while a view stays open. */
export function useNow(everyMs: number = 60_000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(t);
  }, [everyMs]);
  return now;
}

type Status = CallableOutput<"getDeletionStatus">;

/** Why a request has no "fully gone by" date yet, for people. */
const NO_DATE: Record<NonNullable<Status["fullyGoneByUnknown"]>, string> = {
  NOT_ERASED_YET: "not yet: the erasure has not finished",
  RETAINED_UNDER_HOLD: "no date: some data is still kept under a retention hold",
  CANCELLED: "none: the request was cancelled and nothing was erased",
  ARCHIVE_UNDER_HOLD: "no date: an archive copy is under a retention hold",
  ARCHIVE_KEPT_WITHOUT_END: "no date: an archive copy is kept without an end date",
  NOT_RECORDED: "not recorded: purged before the service recorded this date",
};

/** The date by which the last copy is gone (database, point-in-time recovery, backups, archives), or why there is none. */
export function goneByText(s: Pick<Status, "fullyGoneBy" | "fullyGoneByUnknown">): string {
  if (s.fullyGoneBy !== null) return when(s.fullyGoneBy);
  return NO_DATE[s.fullyGoneByUnknown ?? "NOT_RECORDED"];
}

/** Whether the final ERASURE_COMPLETE entry is recorded, and when. */
export function erasureCompleteText(s: Pick<Status, "fullyGoneBy" | "erasureCompleteAt">): string {
  if (s.erasureCompleteAt !== null) return `recorded ${when(s.erasureCompleteAt)}`;
  return s.fullyGoneBy !== null ? "not yet: recorded once the date has passed" : "not yet";
}

type RequestItem = CallableOutput<"listDeletionRequests">["items"][number];

/** Where a request stands and what it waits for, in words (the requests list's "Where it stands"). */
export function whereItStands(r: Pick<RequestItem, "state" | "graceEndsAt" | "blockedReason" | "retainedUnderHold">, nowMs: number): string {
  switch (r.state) {
    case "AWAITING_APPROVAL":
      return "Waiting for a second staff member to approve the closure; its grace period starts then";
    case "PENDING":
      return r.graceEndsAt !== null && Date.parse(r.graceEndsAt) > nowMs
        ? `Waiting out its grace period until ${when(r.graceEndsAt)}: it can still be cancelled`
        : "Grace period over: the next nightly run erases it";
    case "PROCESSING":
      return "Being erased now";
    case "BLOCKED":
      return `Blocked: ${r.blockedReason ?? "see the request"}`;
    case "RETAINED_UNDER_HOLD":
      return `Erased except ${r.retainedUnderHold ?? "some"} document(s) kept under a retention hold; finished once the hold is released`;
    case "CANCELLING":
      return "Being cancelled: the data is being restored";
    case "CANCELLED":
      return "Cancelled: nothing was erased";
    case "PURGED":
      return "Done: erased";
  }
}

/** Who opened a request, in words: the person in the app, staff by name, or the service on its own. */
export function openedBy(source: string, requestedBy: string, people: People | undefined): string {
  switch (source) {
    case "user":
      return "the person themselves, in the app";
    case "auth-backstop":
      return "the service, when the person's sign-in account was deleted";
    case "erasure-replay":
      return "the service, repeating an erasure after a database restore";
    case "staff":
      return `${personName(people, requestedBy)} (staff)`;
    default:
      return `${personName(people, requestedBy)} (${source})`;
  }
}

const SOURCE_WORDS: Record<string, string> = {
  user: "asked for by the person themselves, in the app",
  staff: "opened by a staff member",
  "auth-backstop": "opened by the service when the sign-in account was deleted",
  "erasure-replay": "repeated by the service after a database restore",
};

/** A timeline step in words: "SOFT_DELETED" reads "Soft deleted", and "source user" says who asked. */
export function timelineText(event: string, detail: string | undefined): { event: string; detail: string } {
  const words = event.charAt(0) + event.slice(1).toLowerCase().replace(/_/g, " ");
  const source = detail?.match(/^source (\S+)$/)?.[1];
  return { event: words, detail: source !== undefined ? (SOURCE_WORDS[source] ?? `opened via ${source}`) : (detail ?? "") };
}

/** Why the mass-deletion brake held a run back, in words (the violation's kind stays as a code detail). */
export function brakeWhy(v: { kind: string; retentionClass?: string | null | undefined } & Record<string, unknown>): string {
  const n = (x: unknown) => (typeof x === "number" ? x : null);
  const count = n(v.count);
  const size = n(v.classSize);
  const limit = n(v.limit);
  if (v.kind === "CLASS_SHARE" && count !== null && size !== null && limit !== null) {
    return `it would delete ${count} of the ${size} documents of class ${v.retentionClass ?? "?"}, more than ${Math.round(limit * 100)}% of the class at once`;
  }
  if (v.kind === "TOTAL" && count !== null && limit !== null) return `it would delete ${count} documents, more than the ${limit} one run may delete`;
  return `${v.kind}${v.retentionClass ? ` ${v.retentionClass}` : ""}`;
}

/**
 * The collection a document path belongs to (the last collection segment); a Cloud Storage object (`gs://bucket/name`)
 * is counted by its bucket: what the request view's plan table groups by.
 */
export function collectionOf(path: string): string {
  if (path.startsWith("gs://")) return `objects in ${path.slice(5).split("/")[0] || "?"}`;
  const s = path.split("/");
  return s[s.length - 2] ?? path;
}

/**
 * What an object batch's evidence entry says about the objects it shows: its `detail.objects` lines
 * (`gs://bucket/name#generation outcome`) for the paths the entry lists here (only the asked object, when the
 * question is an object).
 */
export function objectOutcomes(e: { action: string; paths: readonly string[]; detail: Readonly<Record<string, unknown>> }): string[] {
  const objects = e.detail.objects;
  if (e.action !== "PURGE_OBJECTS" || typeof objects !== "string") return [];
  const shown = new Set(e.paths);
  // `gs://bucket/name#generation outcome`: a name may hold spaces and #, the generation and the outcome never do.
  return objects.split("\n").filter((line) => {
    const m = /^(gs:\/\/.+)#[0-9]+ (deleted|gone|changed( to #[0-9]+)?|held \S+)$/.exec(line);
    return m !== null && shown.has(m[1]!);
  });
}
