export { HoldView, activeAmongInTx, activeHoldsInTx, deleteWindowRef, fenceGenerationOf, holdFenceRef, readFence, readFenceInTx, windowFrom } from "./fence";
export { activeHolds, activeHoldsCoveringInTx, applyHoldFlags, applyHoldNow, completePlacement, holdFlaggingCursor, resumeHoldApplications } from "./service";
// Placing and releasing go through holds/cells.ts: in the target's governed database, and for a scope's record in
// every database with scope data (docs/decisions/0036-several-databases.md).
export { holdCell, placeHold, releaseHoldById, resumeHoldPlacements, scopeHoldCells } from "./cells";
export type { ApplyHold } from "./service";
export { enqueueHoldApply, enqueueHoldTask } from "./tasks";
export type { HoldSnapshot } from "./fence";
export { listHolds, releaseReasonsOf } from "./queries";
export { claimingHoldIds } from "./rules";
export type { ListHoldsQuery } from "./queries";
