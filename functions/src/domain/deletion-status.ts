import type { RetainedItem } from "./plan";
import type { PolicyIndex } from "./policy";
import { segments } from "./paths";

/** One retained item as a subject sees it in `getDeletionStatus`: ids and reasons, no content. */
export interface RetainedStatusItem {
  path: string;
  reasonCode: string;
  reason: string;
  until?: string;
  /** A sentence for people, e.g. "order o-1002: finance retention until 2027-09-16". */
  text: string;
}

/** `tenants/t/orders/o-1002` -> "order o-1002": the last collection, singular, and the id. */
export function describePath(path: string): string {
  const s = segments(path);
  const id = s[s.length - 1] ?? path;
  const collection = s[s.length - 2] ?? "";
  const noun = collection.length > 1 && collection.endsWith("s") ? collection.slice(0, -1) : collection;
  return noun ? `${noun} ${id}` : id;
}

/**
 * Turns the planner's retained items into what the subject is told is kept and why. A hold's reason is the
 * registry's description of its reason code (the hold id is staff-internal); a policy reason is the short
 * form before the colon of the registry's reason text ("finance retention").
 */
export function describeRetained(items: readonly RetainedItem[], policy: PolicyIndex): RetainedStatusItem[] {
  return items.map((item) => {
    const holdReason = item.holdId ? policy.holdReason(item.reasonCode) : undefined;
    const reason = holdReason ? holdReason.description : item.reason;
    const short = (holdReason ? holdReason.description.replace(/\.$/, "") : (item.reason.split(":")[0] ?? item.reason)).trim();
    const text = `${describePath(item.path)}: ${short.charAt(0).toLowerCase()}${short.slice(1)}${item.until ? ` until ${item.until}` : ""}`;
    return { path: item.path, reasonCode: item.reasonCode, reason, ...(item.until ? { until: item.until } : {}), text };
  });
}
