import { randomUUID } from "node:crypto";
import type { PurgeUnit } from "../rules/unit";
import { needsFanOut } from "../rules/batches";
import { sweepTargets } from "../rules/sweep";
import type { Actor } from "../../kernel/actor";
import type { JobOptions } from "../../kernel/job";
import type { LeaseHolder } from "../../platform/lease";
import { policy } from "../../platform/registry";
import { HoldView } from "../../holds/index";
import { purgeSettings } from "../settings";
import { checkpointFrom, checkpointRef, type UnitCheckpoint } from "../store";
import { archiveAndVerify } from "./archive";
import { fire, type PurgeHook, type StepEnv } from "./env";
import { deleteBatch } from "./execute";
import { finalizeStep } from "./finalize";
import { maskBatch } from "./mask";
import { objectBatch } from "./objects";
import { newPlanId, planRequestUnit, planSweepUnit, type UnitPlan } from "./plan";
import { recordScopeUsers } from "./tenant-accounts";
import { RampLimiter } from "./rate-limiter";
import { recordSink } from "./records";
import { runSteps, type Steps } from "./step";
import { enqueueChunk, type Enqueue } from "./tasks";
import { blockUnit, handOver, startRound, type LeasedUnit } from "./unit";

/**
 * Running one leased unit, shared by the invocations that do it: the nightly run (every unit, one after another),
 * a purgeRequest task (one deletion request) and a purgeChunk task (a fanned-out round's next chunk). Planning,
 * the archive check, starting the round, and driving it here or handing it to the chunk queue.
 */

/** How a unit is run: the tunables (defaults from the settings) and the hooks tests use. */
export interface UnitRunOptions {
  /** Lease owner id (default: a fresh one per invocation). */
  owner?: string;
  /** Wall clock for leases and the time budget (tests move it to simulate a crashed runner's lease expiring). */
  clock?: () => number;
  leaseMs?: number;
  batchSize?: number;
  /** Batches per step (a checkpoint per step), and how many of them run at a time. */
  stepBatches?: number;
  parallelBatches?: number;
  fanOutThreshold?: number;
  chunkSteps?: number;
  sweepLimit?: number;
  startOpsPerSecond?: number;
  maxOpsPerSecond?: number;
  /** Wall-clock budget of this invocation; steps stop starting after it (the rest resumes later). */
  budgetMs?: number;
  hook?: PurgeHook;
  enqueue?: Enqueue;
}

export type UnitOutcome =
  | "DONE"
  | "BLOCKED"
  | "RUNNING"
  | "FANNED_OUT"
  | "STALE"
  | "LEASE_LOST"
  | "MOVED_ON"
  | "BRAKE_REFUSED"
  | "BRAKE_DEFERRED"
  | "NOTHING_TO_DO"
  | "FAILED";

/** What a run did with a unit. */
export interface UnitReport extends Pick<PurgeUnit, "unitKey" | "kind"> {
  outcome: UnitOutcome;
  reason?: string;
  counts?: Record<string, number>;
}

export interface RunConfig {
  batchSize: number;
  stepBatches: number;
  fanOutThreshold: number;
  chunkSteps: number;
  enqueue: Enqueue;
}

/** An invocation's budget: a function times out at 540 s, and steps stop starting 60 s before. */
export const DEFAULT_BUDGET_MS = 480_000;

/** The purge's steps: delete, mask and object batches run through the batch helper; finalize ends the round. */
export const STEPS: Steps = { delete: deleteBatch, mask: maskBatch, objects: objectBatch, finalize: (cp, step, env) => finalizeStep(cp, step, env, STEPS) };

export function configFor(opts: UnitRunOptions): RunConfig {
  return {
    batchSize: opts.batchSize ?? purgeSettings.batchSize(),
    stepBatches: opts.stepBatches ?? purgeSettings.stepBatches(),
    fanOutThreshold: opts.fanOutThreshold ?? purgeSettings.fanOutThreshold(),
    chunkSteps: opts.chunkSteps ?? purgeSettings.chunkSteps(),
    enqueue: opts.enqueue ?? enqueueChunk,
  };
}

export function holderFor(opts: UnitRunOptions, ownerPrefix: string): LeaseHolder {
  return { owner: opts.owner ?? `${ownerPrefix}:${randomUUID()}`, ttlMs: opts.leaseMs ?? purgeSettings.leaseMs(), clock: opts.clock ?? Date.now };
}

export function limiterFor(opts: { startOpsPerSecond?: number; maxOpsPerSecond?: number }, clock: () => number): RampLimiter {
  const maxOpsPerSecond = opts.maxOpsPerSecond ?? purgeSettings.maxOpsPerSecond();
  const startOpsPerSecond = Math.min(opts.startOpsPerSecond ?? purgeSettings.startOpsPerSecond(), maxOpsPerSecond);
  return new RampLimiter({ startOpsPerSecond, maxOpsPerSecond }, clock);
}

/** One invocation's step environment: its lease holder, clock, actor, delete-rate limiter and budget. */
export function envFor(opts: UnitRunOptions & Pick<JobOptions, "nowMs" | "asOfMs" | "actor" | "correlationId">, holder: LeaseHolder, actor: Actor): StepEnv {
  return {
    holder,
    nowMs: opts.nowMs,
    asOfMs: opts.asOfMs,
    // The purge itself is the system's act; an operator who started it on demand is named beside it
    // (and in the JOB_RUN entry with the same correlation id).
    actor,
    startedBy: opts.actor.type === "system" ? null : `${opts.actor.type}:${opts.actor.id}`,
    correlationId: opts.correlationId ?? null,
    limiter: limiterFor(opts, Date.now),
    parallelBatches: opts.parallelBatches ?? purgeSettings.parallelBatches(),
    holdView: new HoldView(),
    hook: opts.hook,
    deadlineMs: holder.clock() + (opts.budgetMs ?? DEFAULT_BUDGET_MS),
  };
}

/** The counts a unit's checkpoint has summed so far. */
export async function countsOf(unitKey: string): Promise<Record<string, number>> {
  const snap = await checkpointRef(unitKey).get();
  return (snap.get("counts") as Record<string, number> | undefined) ?? {};
}

/** Runs a RUNNING round in this invocation, or hands it to the task queue when it is too large. */
export async function drive(cp: UnitCheckpoint, cfg: RunConfig, env: StepEnv): Promise<UnitOutcome> {
  if (needsFanOut(cp.pathCount, cfg.fanOutThreshold)) {
    const { generation } = await handOver(cp, cfg.chunkSteps, env);
    const now = checkpointFrom((await checkpointRef(cp.unitKey).get()).data());
    await cfg.enqueue({
      unitKey: cp.unitKey,
      round: cp.round,
      generation,
      start: now?.nextStep ?? cp.nextStep,
      nowMs: env.nowMs,
      asOfMs: env.asOfMs,
      correlationId: env.correlationId,
    });
    return "FANNED_OUT";
  }
  return runSteps(cp.unitKey, cp.round, Number.POSITIVE_INFINITY, env, STEPS);
}

/**
 * A fresh unit the brake admitted: archives and verifies what needs an archive (else ARCHIVE_NOT_VERIFIED,
 * nothing deleted), starts the round on the plan's batch records, and drives it.
 */
export async function runFresh(unit: LeasedUnit, plan: UnitPlan, cfg: RunConfig, env: StepEnv): Promise<UnitReport> {
  const report = (outcome: UnitOutcome, reason?: string): UnitReport => ({ unitKey: unit.unitKey, kind: unit.kind, outcome, ...(reason ? { reason } : {}) });
  await fire(env, { point: "afterPlan", unitKey: unit.unitKey, round: plan.round, step: null, batch: null, paths: [] });
  let archives = new Map<string, string>();
  if (plan.needsArchive.length > 0) {
    const result = await archiveAndVerify(
      { unitKey: unit.unitKey, round: plan.round, requestId: unit.requestId, manifestHash: plan.manifestHash, policyVersion: policy().version, leaseRef: unit.leaseRef, subject: unit.subject },
      plan.needsArchive.map((a) => a.path),
      env,
    );
    if (!result.ok) {
      await blockUnit(unit, plan, "ARCHIVE_NOT_VERIFIED", result.problems.map((p) => p.path), result.problems.length, env);
      return report("BLOCKED", "ARCHIVE_NOT_VERIFIED");
    }
    archives = result.archives;
  }
  const cp = await startRound(unit, plan, archives, cfg.stepBatches, env);
  await fire(env, { point: "afterStart", unitKey: cp.unitKey, round: cp.round, step: null, batch: null, paths: [] });
  return report(await drive(cp, cfg, env));
}

/**
 * Plans a leased unit, streaming its decisions into batch records under a fresh plan id (they authorise
 * nothing until a round names that plan). null: a sweep with nothing to delete.
 */
export async function planUnit(unit: LeasedUnit, opts: Pick<JobOptions, "nowMs"> & Pick<UnitRunOptions, "sweepLimit">, cfg: RunConfig): Promise<UnitPlan | null> {
  const round = (unit.previous?.round ?? 0) + 1;
  const planId = newPlanId(round);
  const input = { planId, round, nowMs: opts.nowMs, batchSize: cfg.batchSize, sink: recordSink(unit.unitKey, planId, round) };
  if (unit.kind === "request") {
    if (!unit.requestId || !unit.subject) throw new Error(`request unit ${unit.unitKey} has no subject`);
    // A scope's closure deletes the memberships that name its users: it records them first, for its finalize.
    if (unit.subject.type === "tenant") await recordScopeUsers(unit.requestId, unit.subject.tenantId);
    return planRequestUnit(unit.requestId, unit.subject, input);
  }
  const target = sweepTargets(policy()).find((t) => t.collection === unit.collection);
  if (!target) throw new Error(`no sweep target for ${unit.collection}`);
  return planSweepUnit(target, opts.sweepLimit ?? purgeSettings.sweepLimit(), input);
}

/**
 * Blocks a request whose plan the destroy predicate refused somewhere (nothing is deleted). null: the plan
 * refused nothing.
 */
export async function blockRefused(unit: LeasedUnit, plan: UnitPlan, env: StepEnv): Promise<UnitReport | null> {
  if (plan.blockedCount === 0) return null;
  const reason = plan.blocked[0]!.reason;
  await blockUnit(unit, plan, reason, plan.blocked.map((b) => b.path), plan.blockedCount, env);
  return { unitKey: unit.unitKey, kind: unit.kind, outcome: "BLOCKED", reason };
}
