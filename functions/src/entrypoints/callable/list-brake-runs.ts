import type { z } from "zod";
import { ListBrakeRunsInput } from "../../contract/admin";
import { staffNames } from "../../platform/people";
import { listBrakeRuns } from "../../purge/index";
import { callable, requireRole, type Caller } from "./shared";

export { ListBrakeRunsInput };

/**
 * The deletion sets the mass-deletion brake holds back, for the retention-admins who decide on them
 * (approvePurgeRun) and the compliance officers who watch them; the staff who decided are named.
 */
export async function listBrakeRunsHandler(input: z.infer<typeof ListBrakeRunsInput>, caller: Caller) {
  if (!caller.roles.includes("compliance")) requireRole(caller, "retention-admin");
  const page = await listBrakeRuns(input);
  return { ...page, people: await staffNames(page.items.map((r) => r.decision?.by)) };
}

export const listBrakeRunsCallable = callable("listBrakeRuns", ListBrakeRunsInput, listBrakeRunsHandler);
