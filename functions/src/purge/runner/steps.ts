import { stepAt, stepCount } from "../rules/batches";
import { deleteStep } from "./execute";
import { finalizeStep } from "./finalize";
import { maskStep } from "./mask";
import { markStep } from "./mark";
import type { StepEnv } from "./env";
import { checkpointFrom, checkpointRef, type UnitCheckpoint } from "../store";

export type StepsResult = "DONE" | "BLOCKED" | "RUNNING" | "STALE";

async function readCheckpoint(unitKey: string): Promise<UnitCheckpoint | null> {
  return checkpointFrom((await checkpointRef(unitKey).get()).data());
}

/**
 * Runs a unit's steps from its checkpoint up to `end` (exclusive), one at a time. Each step is its own
 * fenced, checkpointed transaction(s); after each, the checkpoint must have moved on by exactly one, or
 * another runner has the unit and this one stops.
 */
export async function runSteps(unitKey: string, round: number, end: number, env: StepEnv): Promise<StepsResult> {
  for (;;) {
    const cp = await readCheckpoint(unitKey);
    // Finished or superseded by someone else: this invocation did not do it.
    if (!cp || cp.round !== round || cp.phase !== "RUNNING") return "STALE";
    const step = cp.nextStep;
    if (step >= Math.min(end, stepCount(cp.batchCount))) return "RUNNING";
    if (env.holder.clock() > env.deadlineMs) return "RUNNING";
    const s = stepAt(step, cp.batchCount);
    if (s.kind === "finalize") {
      const phase = await finalizeStep(cp, step, env);
      return phase ?? "STALE";
    }
    if (s.kind === "mark") await markStep(cp, step, s.batch, env);
    else if (s.batch < cp.deleteBatches) await deleteStep(cp, step, s.batch, env);
    else await maskStep(cp, step, s.batch, env);
    const after = await readCheckpoint(unitKey);
    if (!after || after.round !== round || (after.phase === "RUNNING" && after.nextStep <= step)) return "STALE";
  }
}
