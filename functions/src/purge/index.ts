export { listBrakeRuns, UNDECIDED_OR_OPEN } from "./approvals";
export type { ListBrakeRunsQuery } from "./approvals";
export { runNightlyPurge, runPurgeChunk } from "./job";
export type { PurgeRunOptions, UnitReport } from "./job";
export { decideBrakeRun } from "./runner/brake";
export { takeFactsOf } from "./runner/unit";
export { purgeSettings } from "./settings";
export { checkpointFrom, checkpointRef, requestRef } from "./store";
