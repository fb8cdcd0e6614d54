import type { z } from "zod";
import { ConfirmProcessorNoticeInput } from "../../contract/processors";
import { confirmManualProcessor } from "../../processors/index";
import { actorOf, callable, requireRole, type Caller } from "./shared";

export { ConfirmProcessorNoticeInput };

/**
 * A compliance officer confirms a manual processor's deletion (a vendor with no API, asked by email or its portal)
 * with the vendor's receipt or ticket id. Recorded once, as the processor's acknowledgement, with the officer as
 * its actor (docs/decisions/0039-processors.md). A webhook or topic processor cannot be confirmed this way: it
 * acknowledges with its own signed receipt.
 */
export async function confirmProcessorNoticeHandler(input: z.infer<typeof ConfirmProcessorNoticeInput>, caller: Caller, nowMs: number = Date.now()) {
  requireRole(caller, "compliance");
  const out = await confirmManualProcessor(input, actorOf(caller), nowMs);
  return { requestId: input.requestId, processor: input.processor, recorded: out.recorded, acknowledgedAt: new Date(out.acknowledgedAt).toISOString() };
}

export const confirmProcessorNotice = callable("confirmProcessorNotice", ConfirmProcessorNoticeInput, (input, caller) => confirmProcessorNoticeHandler(input, caller));
