import { buildDeletionPlan, type DeletionPlan, type DiscoveredDoc, type DiscoveredObject, type Subject } from "./rules";
import { discoverObjects, discoverSnapshots, discoveredFrom } from "./discovery";
import { activeHolds } from "../holds/index";
import { policy } from "../platform/registry";

/**
 * The deletion plan for a subject as the data stands now: active hold records, then the data map walked (its
 * documents, then its Cloud Storage objects), then the pure planner. Read-only. Used by planDeletion, getDeletionStatus and the CLI (the purge streams
 * its own plan from the same discovery and rules, purge/runner/plan.ts).
 */
export async function planSubject(subject: Subject, nowMs: number): Promise<DeletionPlan> {
  const holds = await activeHolds();
  const discovered: DiscoveredDoc[] = [];
  for await (const d of discoverSnapshots(subject)) {
    discovered.push(discoveredFrom(d.snap, d.entryId));
  }
  const objects: DiscoveredObject[] = [];
  for await (const o of discoverObjects(subject)) objects.push(o);
  return buildDeletionPlan(subject, discovered, holds, policy(), nowMs, objects);
}
