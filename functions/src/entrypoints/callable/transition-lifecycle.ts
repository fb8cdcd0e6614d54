import { z } from "zod";
import { LIFECYCLE_STATES } from "../../kernel/lifecycle";
import { transitionDocument } from "../../lifecycle/index";
import { actorOf, callable, inputs, requireRole, type Caller } from "./shared";

export const TransitionLifecycleInput = z
  .object({ path: inputs.documentPath, to: z.enum(LIFECYCLE_STATES), reason: inputs.text.min(1), correlationId: inputs.id.optional() })
  .strict();

/** A retention-admin moves one document through the lifecycle state machine, holds and destroy predicate permitting. */
export async function transitionLifecycleHandler(input: z.infer<typeof TransitionLifecycleInput>, caller: Caller) {
  requireRole(caller, "retention-admin");
  return transitionDocument({ ...input, actor: actorOf(caller), nowMs: Date.now() });
}

export const transitionLifecycle = callable("transitionLifecycle", TransitionLifecycleInput, transitionLifecycleHandler);
