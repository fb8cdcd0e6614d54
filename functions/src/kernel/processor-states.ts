/**
 * The processors' states, shared by the engine and the contract (docs/decisions/0039-processors.md).
 *
 * A notice (the outbox entry) is stored as:
 * - PENDING: written with the erasure's end, not delivered yet (a webhook or topic; a delivery task is on its way);
 * - SENT: delivered (a manual processor's is SENT from the start: it is on staff's list), not yet acknowledged;
 * - ACKNOWLEDGED: the processor's receipt (or a staff confirmation) is recorded, with its evidence;
 * - FAILED: every delivery attempt the queue allows failed (evidence PROCESSOR_DELIVERY_FAILED);
 * - HELD: a hold covers what the processor receives; delivery waits for its release.
 */
export const NOTICE_STATES = ["PENDING", "SENT", "ACKNOWLEDGED", "FAILED", "HELD"] as const;
export type NoticeState = (typeof NOTICE_STATES)[number];

/** The notice states that are still open: the processor has not confirmed the deletion (every state but ACKNOWLEDGED). */
export const OPEN_NOTICE_STATES: readonly NoticeState[] = NOTICE_STATES.filter((s) => s !== "ACKNOWLEDGED");

/** What a status, `requests show`, `explain` and the console say of a processor: an open notice past its deadline is overdue. */
export const PROCESSOR_STATUSES = ["pending", "held", "sent", "acknowledged", "overdue", "failed"] as const;
export type ProcessorStatus = (typeof PROCESSOR_STATUSES)[number];

export const PROCESSOR_KINDS = ["webhook", "pubsub", "manual"] as const;
