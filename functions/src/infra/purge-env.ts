import type { BulkWriter } from "firebase-admin/firestore";
import type { Actor, EvidenceBody } from "../domain/evidence";
import type { LeaseHolder } from "./lease";
import type { UnitCheckpoint } from "./purge-store";

/**
 * Points where a test may inject a fault (throw, as a crash would) or act between batches (place a hold).
 * Production passes no hook.
 */
export type PurgeHookPoint =
  | "afterArchiveWrite"
  | "afterStart"
  | "afterMark"
  | "beforeExecute"
  | "afterDecide"
  | "afterDelete"
  | "afterExecute"
  | "beforeFinalize";

export interface PurgeHookContext {
  point: PurgeHookPoint;
  unitKey: string;
  round: number;
  step: number | null;
  batch: number | null;
  paths: readonly string[];
}

export type PurgeHook = (ctx: PurgeHookContext) => Promise<void> | void;

/** Everything a purge step needs besides the checkpoint: who acts, as of when, under which lease. */
export interface StepEnv {
  holder: LeaseHolder;
  nowMs: number;
  asOfMs: number | null;
  actor: Actor;
  /** Who started the run when it was not the schedule (an operator through runRetentionJob), as "type:id". */
  startedBy: string | null;
  correlationId: string | null;
  /** The delete rate: BulkWriter starts at `startOpsPerSecond` and ramps 1.5x every 5 minutes up to the max. */
  throttle: { startOpsPerSecond: number; maxOpsPerSecond: number };
  /**
   * The invocation's one delete writer, created on first use and shared by every batch, so the ramp
   * accrues over the run instead of restarting at the start rate for each batch. Closed by the job.
   */
  writer: { current: BulkWriter | null };
  hook: PurgeHook | undefined;
  /** Wall-clock time after which no new step starts (the invocation's budget); the unit resumes later. */
  deadlineMs: number;
}

export async function fire(env: Pick<StepEnv, "hook">, ctx: PurgeHookContext): Promise<void> {
  if (env.hook) await env.hook(ctx);
}

/** The common fields of the purge's evidence: actor, time, policy version, request and manifest. */
export function purgeEvidence(
  env: StepEnv,
  cp: Pick<UnitCheckpoint, "unitKey" | "round" | "requestId" | "manifestHash" | "policyVersion">,
  body: Pick<EvidenceBody, "action" | "decision"> & Partial<EvidenceBody>,
): EvidenceBody {
  return {
    actor: env.actor,
    policyVersion: cp.policyVersion,
    atMs: env.nowMs,
    requestId: cp.requestId,
    correlationId: env.correlationId,
    manifestHash: cp.manifestHash,
    asOfMs: env.asOfMs,
    ...body,
    detail: { unitKey: cp.unitKey, round: cp.round, ...(env.startedBy ? { startedBy: env.startedBy } : {}), ...(body.detail ?? {}) },
  };
}
