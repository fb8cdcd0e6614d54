import { z } from "zod";
import { PROCESSOR_KINDS, PROCESSOR_STATUSES } from "../kernel/processor-states";
import { inputs, isoString } from "./inputs";

/**
 * The processors of an erasure as a status shows them (getDeletionStatus, `requests show`, the console): one per
 * processor the request notified, with its state (an open one past its deadline is `overdue`), its agreed deadline,
 * and the receipt once acknowledged (docs/decisions/0039-processors.md).
 */
export const ProcessorView = z.object({
  processor: z.string(),
  kind: z.enum(PROCESSOR_KINDS),
  status: z.enum(PROCESSOR_STATUSES),
  /** The request that notified it (a request group: each member's own). */
  requestId: z.string(),
  deadline: isoString,
  sentAt: isoString.nullable(),
  acknowledgedAt: isoString.nullable(),
  /** The processor's receipt id, or the reference a staff member gave when confirming a manual processor. */
  receiptId: z.string().nullable(),
  attempts: z.number(),
  /** Why the last delivery attempt failed (a code: TIMEOUT, HTTP_503, RECEIPT_FORGED...), null after a success. */
  lastError: z.string().nullable(),
});
/** One processor as a status shows it: the schema's own type, which the engine builds (processors/views.ts). */
export type ProcessorView = z.infer<typeof ProcessorView>;

/** Staff confirm that a manual processor (a vendor with no API) erased the subject: the vendor's receipt or ticket id. */
export const ConfirmProcessorNoticeInput = z
  .object({
    requestId: inputs.id,
    processor: z.string().regex(/^[a-z0-9]+(-[a-z0-9]+)*$/, "a processor's name (kebab-case)").max(100),
    receiptId: z.string().min(1).max(200).regex(/^[\x20-\x7E]+$/, "printable characters"),
  })
  .strict();
/** `recorded`: false when the processor's acknowledgement was already recorded (a second confirmation changes nothing). */
export const ConfirmProcessorNoticeOutput = z.object({ requestId: z.string(), processor: z.string(), recorded: z.boolean(), acknowledgedAt: isoString });
