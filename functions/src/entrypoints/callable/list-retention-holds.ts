import type { z } from "zod";
import { ListRetentionHoldsInput } from "../../contract/holds";
import { holdCell, listHolds } from "../../holds/index";
import { notFound } from "../../kernel/errors";
import { staffNames, staffUidForEmail } from "../../platform/people";
import { callable, requireRole, type Caller } from "./shared";

export { ListRetentionHoldsInput };

/**
 * Compliance lists holds (active by default, or the history), newest first, by reason, placer (a uid, or a staff
 * member's email) and target, a page at a time; each says whether it is past releaseAfter and whether the caller
 * may release it now (a two-person hold placed by the caller awaits a second officer). The placers and releasers
 * are named.
 */
export async function listRetentionHoldsHandler(input: z.infer<typeof ListRetentionHoldsInput>, caller: Caller, nowMs: number = Date.now()) {
  requireRole(caller, "compliance");
  let placedBy = input.placedBy;
  if (placedBy?.includes("@")) {
    const uid = await staffUidForEmail(placedBy);
    if (uid === null) throw notFound("STAFF_NOT_FOUND", "No staff account has this email.");
    placedBy = uid;
  }
  if (input.database !== undefined) holdCell(input.database);
  const page = await listHolds({ ...input, placedBy, callerUid: caller.uid, nowMs });
  const people = await staffNames(page.items.flatMap((h) => [h.placedBy, h.releasedBy]));
  return { ...page, people };
}

export const listRetentionHolds = callable("listRetentionHolds", ListRetentionHoldsInput, (input, caller) => listRetentionHoldsHandler(input, caller));
