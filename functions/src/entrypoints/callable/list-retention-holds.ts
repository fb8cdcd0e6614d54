import type { z } from "zod";
import { ListRetentionHoldsInput } from "../../contract/holds";
import { listHolds } from "../../holds/index";
import { callable, requireRole, type Caller } from "./shared";

export { ListRetentionHoldsInput };

/**
 * Compliance lists holds (active by default, or the history), newest first, by reason, placer and target, a
 * page at a time; each says whether it is past releaseAfter and whether the caller may release it now (a
 * two-person hold placed by the caller awaits a second officer).
 */
export async function listRetentionHoldsHandler(input: z.infer<typeof ListRetentionHoldsInput>, caller: Caller, nowMs: number = Date.now()) {
  requireRole(caller, "compliance");
  return listHolds({ ...input, callerUid: caller.uid, nowMs });
}

export const listRetentionHolds = callable("listRetentionHolds", ListRetentionHoldsInput, (input, caller) => listRetentionHoldsHandler(input, caller));
