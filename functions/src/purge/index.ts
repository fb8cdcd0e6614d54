export { runNightlyPurge, runPurgeChunk } from "./job";
export type { PurgeRunOptions, UnitReport } from "./job";
export { decideBrakeRun } from "./runner/brake";
export type { PurgeHook } from "./runner/env";
export { takeFactsOf } from "./runner/unit";
export { purgeSettings } from "./settings";
export { checkpointFrom, checkpointRef, requestRef } from "./store";
export { planRequestUnit, type UnitPlan } from "./runner/plan";
export type { PlanSink } from "./runner/records";
