import type { z } from "zod";
import { TransitionLifecycleInput } from "../../contract/admin";
import { transitionDocument } from "../../lifecycle/index";
import { actorOf, callable, requireRole, type Caller } from "./shared";

export { TransitionLifecycleInput };

/** A retention-admin moves one document through the lifecycle state machine, holds and destroy predicate permitting. */
export async function transitionLifecycleHandler(input: z.infer<typeof TransitionLifecycleInput>, caller: Caller) {
  requireRole(caller, "retention-admin");
  return transitionDocument({ ...input, actor: actorOf(caller), nowMs: Date.now() });
}

export const transitionLifecycle = callable("transitionLifecycle", TransitionLifecycleInput, transitionLifecycleHandler);
