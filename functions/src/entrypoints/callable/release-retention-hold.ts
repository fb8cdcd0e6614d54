import type { z } from "zod";
import { ReleaseRetentionHoldInput } from "../../contract/holds";
import { releaseHoldById } from "../../holds/index";
import { actorOf, callable, requireRole, type Caller } from "./shared";

export { ReleaseRetentionHoldInput };

/** Compliance releases a hold, subject to the two-person rule and releaseAfter of its reason code. */
export async function releaseRetentionHoldHandler(input: z.infer<typeof ReleaseRetentionHoldInput>, caller: Caller) {
  requireRole(caller, "compliance");
  // In every governed database that holds it (or the one `database` names).
  await releaseHoldById({ holdId: input.holdId, reason: input.reason, actor: actorOf(caller), nowMs: Date.now(), ...(input.database !== undefined ? { database: input.database } : {}) });
  return { holdId: input.holdId, state: "RELEASED" as const };
}

export const releaseRetentionHold = callable("releaseRetentionHold", ReleaseRetentionHoldInput, releaseRetentionHoldHandler);
