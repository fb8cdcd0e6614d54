export { HoldView, activeAmongInTx, activeHoldsInTx, deleteWindowRef, fenceGenerationOf, holdFenceRef, readFence, readFenceInTx, windowFrom } from "./fence";
export { activeHolds, activeHoldsCoveringInTx, applyHoldFlags, applyHoldNow, completePlacement, holdFlaggingCursor, placeHold, releaseHoldById, resumeHoldApplications } from "./service";
export type { ApplyHold } from "./service";
export { enqueueHoldApply, enqueueHoldTask } from "./tasks";
export type { HoldSnapshot } from "./fence";
export { listHolds, releaseReasonsOf } from "./queries";
export { claimingHoldIds } from "./rules";
export type { ListHoldsQuery } from "./queries";
