import type { z } from "zod";
import { ExtendRequestDeadlineInput } from "../../contract/requests";
import { permissionDenied } from "../../kernel/errors";
import { extendRequestDeadline } from "../../requests/index";
import { actorOf, callable, type Caller } from "./shared";

export { ExtendRequestDeadlineInput };

/**
 * Staff (compliance or retention-admin) extend a request's legal deadline: once, within its law's limit, with a
 * written reason that is recorded as evidence (requests/legal-clock.ts). A refusal writes nothing.
 */
export async function extendRequestDeadlineHandler(input: z.infer<typeof ExtendRequestDeadlineInput>, caller: Caller) {
  if (caller.roles.length === 0) throw permissionDenied("NOT_STAFF", "Only a compliance officer or a retention-admin may extend a deadline.");
  const out = await extendRequestDeadline({ requestId: input.requestId, reason: input.reason, ...(input.until !== undefined ? { untilMs: Date.parse(input.until) } : {}), actor: actorOf(caller), nowMs: Date.now() });
  const iso = (ms: number) => new Date(ms).toISOString();
  return { requestId: out.requestId, extended: out.extended.map((e) => ({ requestId: e.requestId, law: e.law, originalDueAt: iso(e.originalDueAtMs), dueAt: iso(e.dueAtMs) })) };
}

export const extendRequestDeadlineCallable = callable("extendRequestDeadline", ExtendRequestDeadlineInput, extendRequestDeadlineHandler);
