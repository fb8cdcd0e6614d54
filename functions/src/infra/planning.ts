import { buildDeletionPlan, type DeletionPlan, type DiscoveredDoc, type Subject } from "../domain/plan";
import { discoverSubject } from "./discovery";
import { activeHolds } from "./holds";
import { policy } from "./registry";

/**
 * The deletion plan for a subject as the data stands now: active hold records, then the data map walked,
 * then the pure planner. Read-only. Used by planDeletion, getDeletionStatus, the purge engine and the CLI.
 */
export async function planSubject(subject: Subject, nowMs: number): Promise<DeletionPlan> {
  const holds = await activeHolds();
  const discovered: DiscoveredDoc[] = [];
  for await (const d of discoverSubject(subject)) discovered.push(d);
  return buildDeletionPlan(subject, discovered, holds, policy(), nowMs);
}
