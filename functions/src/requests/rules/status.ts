import type { RetainedItem } from "../../plan/rules";
import type { PolicyIndex } from "../../kernel/policy";
import { segments } from "../../kernel/paths";

/** One retained item as a subject sees it in `getDeletionStatus`: ids and reasons, no content. */
export interface RetainedStatusItem {
  path: string;
  reasonCode: string;
  reason: string;
  until?: string;
  /** A sentence for people, e.g. "order o-1002: finance retention until 2027-09-16". */
  text: string;
}

/** `workspaces/w/docs/d-1002` -> "doc d-1002": the last collection, singular, and the id. */
export function describePath(path: string): string {
  const s = segments(path);
  const id = s[s.length - 1] ?? path;
  const collection = s[s.length - 2] ?? "";
  const noun = collection.length > 1 && collection.endsWith("s") ? collection.slice(0, -1) : collection;
  return noun ? `${noun} ${id}` : id;
}

/** Who reads a status: the subject, or compliance staff. */
export type StatusAudience = "subject" | "staff";

/** What a subject is told about anything a hold keeps: the same words for every hold, whatever its reason. */
export const LEGAL_OBLIGATION = { reasonCode: "LEGAL_OBLIGATION", reason: "Retained for a legal obligation.", short: "retained for a legal obligation" } as const;

/** A retained item that a hold keeps (a hold record covers it, or it carries the hold flag). */
export function isHeldItem(item: Pick<RetainedItem, "holdId" | "reasonCode">): boolean {
  return item.holdId !== undefined || item.reasonCode === "LEGAL_HOLD";
}

/**
 * Turns the planner's retained items into what the reader is told is kept and why.
 * - A subject never learns a hold's reason code, note or id, nor when it might end: a hold can be a litigation
 *   hold, a fraud investigation or a regulator's preservation request, and telling the subject which would tip
 *   them off. Every held item reads "retained for a legal obligation", the same for every hold reason, so that
 *   the words themselves reveal nothing.
 * - Compliance staff see the hold's reason code and the registry's description of it.
 * A policy reason (retain and mask entries, classes not deletable on request) is the same for both: the short
 * form before the colon of the registry's reason text ("finance retention"), with its end date.
 */
export function describeRetained(items: readonly RetainedItem[], policy: PolicyIndex, audience: StatusAudience): RetainedStatusItem[] {
  return items.map((item) => {
    if (audience === "subject" && isHeldItem(item)) {
      return { path: item.path, reasonCode: LEGAL_OBLIGATION.reasonCode, reason: LEGAL_OBLIGATION.reason, text: `${describePath(item.path)}: ${LEGAL_OBLIGATION.short}` };
    }
    const holdReason = item.holdId ? policy.holdReason(item.reasonCode) : undefined;
    const reason = holdReason ? holdReason.description : item.reason;
    const short = (holdReason ? holdReason.description.replace(/\.$/, "") : (item.reason.split(":")[0] ?? item.reason)).trim();
    const text = `${describePath(item.path)}: ${short.charAt(0).toLowerCase()}${short.slice(1)}${item.until ? ` until ${item.until}` : ""}`;
    return { path: item.path, reasonCode: item.reasonCode, reason, ...(item.until ? { until: item.until } : {}), text };
  });
}

/** A request's stored status summary: what planning the subject found retained, and what it depended on. */
export interface StatusSummaryFacts {
  plannedAtMs: number;
  policyVersion: string;
  /** The hold fence's generation when it was planned: every hold placement and release moves it. */
  holdFence: number;
}

/**
 * Whether a stored summary may answer a status call, or the subject must be planned again: at most once per
 * `refreshMs`, and at once when the holds or the policy version changed (a hold placed or released changes
 * what is retained and why). A summary from the future (a clock moved back) is not trusted.
 */
export function summaryIsFresh(summary: StatusSummaryFacts | null, now: { nowMs: number; policyVersion: string; holdFence: number; refreshMs: number }): boolean {
  if (!summary) return false;
  if (summary.policyVersion !== now.policyVersion || summary.holdFence !== now.holdFence) return false;
  const age = now.nowMs - summary.plannedAtMs;
  return age >= 0 && age < now.refreshMs;
}
