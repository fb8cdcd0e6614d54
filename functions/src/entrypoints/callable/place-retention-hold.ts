import type { z } from "zod";
import { PlaceRetentionHoldInput } from "../../contract/holds";
import { enqueueHoldApply, holdCell, placeHold, scopeHoldCells } from "../../holds/index";
import { registryPolicy } from "../../platform/registry";
import { actorOf, callable, requireRole, type Caller } from "./shared";

export { PlaceRetentionHoldInput };

/**
 * Compliance places a hold on a document or a subtree root the registry names (a scope's record, such as a tenant). A subtree hold returns
 * once its record protects the subtree; its documents are flagged by the applyRetentionHold task queue.
 */
export async function placeRetentionHoldHandler(input: z.infer<typeof PlaceRetentionHoldInput>, caller: Caller) {
  requireRole(caller, "compliance");
  const { holdId } = await placeHold({
    targetPath: input.targetPath,
    ...(input.database !== undefined ? { database: input.database } : {}),
    reasonCode: input.reasonCode,
    releaseAfterMs: input.releaseAfter !== undefined ? Date.parse(input.releaseAfter) : null,
    note: input.note,
    actor: actorOf(caller),
    nowMs: Date.now(),
  }, enqueueHoldApply);
  // Under several governed databases, where the hold was placed: its target's, and for a scope's record every
  // database with scope data.
  if (registryPolicy().cells().length === 1) return { holdId };
  const cell = holdCell(input.database);
  return { holdId, databases: [cell, ...scopeHoldCells(input.targetPath, cell)] };
}

/**
 * A subtree hold lists every document of a tenant (streamed, a digest kept, not the list) before its record
 * is written: a callable's default 60 s would cut a large tenant short, so it gets the scheduled jobs' timeout.
 * Memory is the stream's buffer (segments of 20,000 retention-field snapshots), not the tenant's size: 512 MiB.
 */
export const placeRetentionHold = callable("placeRetentionHold", PlaceRetentionHoldInput, placeRetentionHoldHandler, { timeoutSeconds: 540, memory: "512MiB" });
