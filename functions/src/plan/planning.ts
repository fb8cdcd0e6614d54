import { buildDeletionPlan, type DeletionPlan, type DiscoveredDoc, type Subject } from "./rules";
import { discoverSnapshots, discoveredFrom, type DiscoveredSnapshot } from "./discovery";
import { activeHolds } from "../holds/index";
import { policy } from "../platform/registry";

/**
 * The deletion plan for a subject as the data stands now: active hold records, then the data map walked,
 * then the pure planner. Read-only. Used by planDeletion, getDeletionStatus, the purge engine and the CLI.
 * `seen` receives each document as read, for a caller that judges them further without reading them again.
 */
export async function planSubject(subject: Subject, nowMs: number, seen?: (d: DiscoveredSnapshot) => void): Promise<DeletionPlan> {
  const holds = await activeHolds();
  const discovered: DiscoveredDoc[] = [];
  for await (const d of discoverSnapshots(subject)) {
    seen?.(d);
    discovered.push(discoveredFrom(d.snap, d.entryId));
  }
  return buildDeletionPlan(subject, discovered, holds, policy(), nowMs);
}
