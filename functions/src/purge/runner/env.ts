import type { Actor, EvidenceBody } from "../../evidence/rules";
import type { HoldView } from "../../holds/index";
import type { LeaseHolder } from "../../platform/lease";
import type { RampLimiter } from "./rate-limiter";
import type { UnitCheckpoint } from "../store";
import type { DataKeys } from "../../shred/index";

/**
 * Points where a test may inject a fault (throw, as a crash would) or act between batches (place a hold).
 * Production passes no hook.
 */
export type PurgeHookPoint =
  /** A unit was leased, before it is planned. */
  | "afterLease"
  /** A fresh unit was planned (and admitted by the brake), before its archives are written and its round starts. */
  | "afterPlan"
  | "afterArchiveWrite"
  | "afterStart"
  /** The round has started (PURGE_DECIDED committed); its records of other plans are about to be removed. */
  | "beforePrune"
  /** A delete batch's decision stands: planned, and its trigger-collection documents marked. */
  | "afterMark"
  /** Before a delete batch's probe and transaction; `paths` are the batch's unsettled paths. */
  | "beforeExecute"
  /**
   * Inside a delete batch's transaction, after every decision and write is queued, before the commit;
   * `paths` are the paths about to be deleted. A hook must not await a write that waits on this transaction.
   */
  | "inExecute"
  | "afterExecute"
  | "beforeFinalize"
  /**
   * Inside the finalize transaction of a round that ends PURGED or RETAINED_UNDER_HOLD, after its reads and
   * writes are queued, before the commit; `paths` are the held paths it lists. Like `inExecute`, a hook must not
   * await a write that waits on this transaction.
   */
  | "inFinalize"
  /** In the final sweep, before the late batches of one stage run (`batch`: the first one's ordinal). */
  | "beforeLate"
  /**
   * An object batch's delete window has opened (its decision committed), before any delete; `paths` are the objects
   * it may delete. A hold placed here covers an open window (docs/HOLD-FENCE.md).
   */
  | "inObjectWindow"
  /** Before one object's delete in a window (`paths`: that object); a stall here outlives the window. */
  | "beforeObjectDelete"
  /** The window's deletes are over (`paths`: the objects deleted), before the transaction that records them and closes it. */
  | "afterObjectDeletes";

export interface PurgeHookContext {
  point: PurgeHookPoint;
  unitKey: string;
  round: number;
  step: number | null;
  batch: number | null;
  paths: readonly string[];
}

/**
 * A hook: called at each point it wants (`points`; every point when it names none). A delete batch reads its
 * record ahead of its transaction only for a hook that wants `afterMark` or `beforeExecute` (they are told the
 * batch's paths), so a hook that names its points costs the purge nothing else.
 */
export type PurgeHook = ((ctx: PurgeHookContext) => Promise<void> | void) & { points?: readonly PurgeHookPoint[] };

/** Whether the run's hook wants to hear about `point`. */
export const wants = (env: Pick<StepEnv, "hook">, point: PurgeHookPoint): boolean => env.hook !== undefined && (env.hook.points === undefined || env.hook.points.includes(point));

/** Everything a purge step needs besides the checkpoint: who acts, as of when, under which lease. */
export interface StepEnv {
  holder: LeaseHolder;
  nowMs: number;
  asOfMs: number | null;
  actor: Actor;
  /** Who started the run when it was not the schedule (an operator through runRetentionJob), as "type:id". */
  startedBy: string | null;
  correlationId: string | null;
  /**
   * The invocation's delete rate: it starts at the start rate and ramps 1.5x every 5 minutes up to the max
   * (Firestore's 500/50/5 guidance). One per invocation, so the ramp accrues over the whole run.
   */
  limiter: RampLimiter;
  /** How many batches of a step run at a time. */
  parallelBatches: number;
  /** The active holds, read through the hold fence and cached per fence generation (holds/fence.ts). */
  holdView: HoldView;
  /**
   * The data keys that open archive copies, one cache per step (`runGroup` sets it); without one, a batch opens its
   * own. Opened outside the batch's transaction (execute.ts), so no KMS call runs while it holds its locks.
   */
  dataKeys?: DataKeys;
  hook: PurgeHook | undefined;
  /** Wall-clock time after which no new step starts (the invocation's budget); the unit resumes later. */
  deadlineMs: number;
}

export async function fire(env: Pick<StepEnv, "hook">, ctx: PurgeHookContext): Promise<void> {
  if (env.hook && wants(env, ctx.point)) await env.hook(ctx);
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
