import { refusalReason, type CallableOutput } from "@atlasmart/retention-client";
import { useEffect, useState } from "react";

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

/** Whose data a deletion request erases, for people: a user (in their tenant) or a whole tenant. */
export function subjectLabel(s: CallableOutput<"listDeletionRequests">["items"][number]["subject"]): string {
  return s.type === "user" ? `${s.uid} (tenant ${s.tenantId})` : `tenant ${s.tenantId}`;
}

/** What a failed call says to a person: the refusal's code and message. */
export function problem(err: unknown): string {
  const reason = refusalReason(err);
  const message = err instanceof Error ? err.message : String(err);
  return reason ? `${reason}: ${message}` : message;
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
