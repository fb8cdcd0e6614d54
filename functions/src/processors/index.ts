// The processors wing (docs/decisions/0039-processors.md): the outbox written with an erasure's end, its delivery,
// the acknowledgements, and what a status, the audit and ERASURE_COMPLETE read of it.
export { writeNoticesInTx, existingNoticesInTx, deliverNotice, heldPathsOf, type DeliveryOutcome, type DeliveryOptions } from "./deliver";
export { acknowledgeNotice, confirmManualProcessor, handleAckCallback, type CallbackAnswer } from "./ack";
export { resendFailedNotice } from "./resend";
export { sweepProcessorNotices, enqueueNoticeTask, type EnqueueNotice, type NoticeTask } from "./sweep";
export { noticesOfRequest, noticeRef } from "./store";
export { notifiedRequestIds, openProcessors, processorStatus, processorsDeadlineMs, type Notice, type ProcessorStatus } from "./rules";
export { processorViews, type ProcessorView } from "./views";
