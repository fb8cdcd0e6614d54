import type { z } from "zod";
import { GetRetentionRegistryInput, type GetRetentionRegistryOutput } from "../../contract/registry";
import { registryPolicy } from "../../platform/registry";
import { permissionDenied } from "../../kernel/errors";
import { callable, type Caller } from "./shared";

export { GetRetentionRegistryInput };

/**
 * The registry the functions enforce, for staff: the console takes its labels (the scope kind's name), its hold
 * form's examples (the subtree roots, the scope's record) and its hold reasons from it, so one console build serves
 * any app and cannot drift from what the functions enforce. Read-only; nothing is written.
 */
export function getRetentionRegistryHandler(_input: z.infer<typeof GetRetentionRegistryInput>, caller: Caller): Promise<z.infer<typeof GetRetentionRegistryOutput>> {
  if (caller.roles.length === 0) throw permissionDenied("NOT_STAFF", "Only compliance officers and retention-admins may read the retention registry.");
  // All of it: every governed database's part (the console names the database a hold goes to, and checks its path
  // against that database's part).
  const enforced = registryPolicy();
  return Promise.resolve({ version: enforced.version, registry: enforced.registry });
}

export const getRetentionRegistry = callable("getRetentionRegistry", GetRetentionRegistryInput, getRetentionRegistryHandler);
