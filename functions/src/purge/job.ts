import type { PurgeUnit } from "./rules/unit";
import { randomUUID } from "node:crypto";
import { chunkAt, needsFanOut, stepCount } from "./rules/batches";
import { sweepTargets } from "./rules/sweep";
import { archiveAndVerify } from "./runner/archive";
import { LeaseLostError, releaseLease, type LeaseHolder } from "../platform/lease";
import { log } from "../platform/logs";
import { applyBrake, dueDates, judgeBrake, type BrakeOutcome } from "./runner/brake";
import { fire, type PurgeHook, type StepEnv } from "./runner/env";
import { newPlanId, planRequestUnit, planSweepUnit, type UnitPlan } from "./runner/plan";
import { discardSink, recordSink } from "./runner/records";
import { purgeSettings } from "./settings";
import { deleteBatch } from "./runner/execute";
import { finalizeStep } from "./runner/finalize";
import { maskBatch } from "./runner/mask";
import { runSteps, type Steps } from "./runner/step";
import { checkpointFrom, checkpointRef, requestRef, type UnitCheckpoint } from "./store";
import { enqueueChunk, type Enqueue, type PurgeChunkTask } from "./runner/tasks";
import { blockUnit, candidateRequestIds, chainOwner, handOver, leaseRequest, leaseSweep, RequestMovedOnError, startRound, subjectOf, type LeasedUnit } from "./runner/unit";
import { HoldView, readFence, applyHoldFlags, resumeHoldApplications, type ApplyHold } from "../holds/index";
import { RampLimiter } from "./runner/rate-limiter";
import { resumeCancellations } from "../requests/index";
import { policy } from "../platform/registry";
import { settings } from "../platform/settings";
import type { JobOptions, JobSummary } from "../kernel/job";

/**
 * The nightly purge (docs/OVERVIEW.md, "Background work"). One run:
 * 1. leases its units: deletion requests whose grace is over (and PROCESSING ones to resume), and one
 *    policy sweep per collection whose class has a duration (purge/rules/sweep.ts);
 * 2. plans each fresh unit and judges every path with the destroy predicate; a request with a refused
 *    path is BLOCKED before anything happens;
 * 3. applies the mass-deletion brake unit by unit (purge/runner/brake.ts): a unit that trips it on its own
 *    waits for a retention-admin's approval of exactly its deletion set (approvePurgeRun); the others run,
 *    oldest due first, until the run's limits would trip, and the rest wait for the next run;
 * 4. per unit: archives and verifies what needs an archive (else ARCHIVE_NOT_VERIFIED, nothing deleted),
 *    starts the round on the plan's batch records (the decision, docs/PURGE-ENGINE.md), then deletes
 *    children first, external copies, masks, sweeps for late finds, and verifies every record before PURGED;
 *    a unit over the fan-out threshold goes to the purgeChunk task queue instead.
 * Every step is leased, checkpointed and resumable; failures are collected per unit and rethrown at the
 * end, so one broken unit neither hides its error nor stops the others.
 */

export interface PurgeRunOptions extends JobOptions {
  /** Lease owner id (default: a fresh one per run). */
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
  maxRequests?: number;
  startOpsPerSecond?: number;
  maxOpsPerSecond?: number;
  /** Wall-clock budget of this invocation; steps stop starting after it (the rest resumes later). */
  budgetMs?: number;
  /** Take only these deletion requests (an erasure replay's); default: every request the run may take. */
  requestIds?: readonly string[];
  /** Run the policy sweep as well as the deletion requests (default true). */
  sweep?: boolean;
  hook?: PurgeHook;
  enqueue?: Enqueue;
  /** How a stalled subtree hold's flagging is resumed (default: here, within a minute's budget). */
  applyHold?: ApplyHold;
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

interface RunConfig {
  batchSize: number;
  stepBatches: number;
  fanOutThreshold: number;
  chunkSteps: number;
  enqueue: Enqueue;
}

const DEFAULT_BUDGET_MS = 480_000;

/** The purge's steps: delete and mask batches run through the batch helper; finalize ends the round. */
const STEPS: Steps = { delete: deleteBatch, mask: maskBatch, finalize: (cp, step, env) => finalizeStep(cp, step, env, deleteBatch) };
const PURGE_ACTOR = { type: "system", id: "nightlyPurge" } as const;

function holderFor(opts: PurgeRunOptions): LeaseHolder {
  return { owner: opts.owner ?? `nightlyPurge:${randomUUID()}`, ttlMs: opts.leaseMs ?? purgeSettings.leaseMs(), clock: opts.clock ?? Date.now };
}

function limiterFor(opts: { startOpsPerSecond?: number; maxOpsPerSecond?: number }, clock: () => number): RampLimiter {
  const maxOpsPerSecond = opts.maxOpsPerSecond ?? purgeSettings.maxOpsPerSecond();
  const startOpsPerSecond = Math.min(opts.startOpsPerSecond ?? purgeSettings.startOpsPerSecond(), maxOpsPerSecond);
  return new RampLimiter({ startOpsPerSecond, maxOpsPerSecond }, clock);
}

function envFor(opts: PurgeRunOptions, holder: LeaseHolder): StepEnv {
  return {
    holder,
    nowMs: opts.nowMs,
    asOfMs: opts.asOfMs,
    // The purge itself is the system's act; an operator who started it on demand is named beside it
    // (and in the JOB_RUN entry with the same correlation id).
    actor: PURGE_ACTOR,
    startedBy: opts.actor.type === "system" ? null : `${opts.actor.type}:${opts.actor.id}`,
    correlationId: opts.correlationId ?? null,
    limiter: limiterFor(opts, Date.now),
    parallelBatches: opts.parallelBatches ?? purgeSettings.parallelBatches(),
    holdView: new HoldView(),
    hook: opts.hook,
    deadlineMs: holder.clock() + (opts.budgetMs ?? DEFAULT_BUDGET_MS),
  };
}

async function countsOf(unitKey: string): Promise<Record<string, number>> {
  const snap = await checkpointRef(unitKey).get();
  return (snap.get("counts") as Record<string, number> | undefined) ?? {};
}

/** Runs a RUNNING round in this invocation, or hands it to the task queue when it is too large. */
async function drive(cp: UnitCheckpoint, cfg: RunConfig, env: StepEnv): Promise<UnitOutcome> {
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

async function runFresh(unit: LeasedUnit, plan: UnitPlan, cfg: RunConfig, env: StepEnv): Promise<UnitReport> {
  const report = (outcome: UnitOutcome, reason?: string): UnitReport => ({ unitKey: unit.unitKey, kind: unit.kind, outcome, ...(reason ? { reason } : {}) });
  let archives = new Map<string, string>();
  if (plan.needsArchive.length > 0) {
    const result = await archiveAndVerify(
      { unitKey: unit.unitKey, round: plan.round, requestId: unit.requestId, manifestHash: plan.manifestHash, policyVersion: policy().version, leaseRef: unit.leaseRef },
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
async function planUnit(unit: LeasedUnit, opts: PurgeRunOptions, cfg: RunConfig): Promise<UnitPlan | null> {
  const round = (unit.previous?.round ?? 0) + 1;
  const planId = newPlanId(round);
  const input = { planId, round, nowMs: opts.nowMs, batchSize: cfg.batchSize, sink: recordSink(unit.unitKey, planId, round) };
  if (unit.kind === "request") {
    if (!unit.requestId || !unit.subject) throw new Error(`request unit ${unit.unitKey} has no subject`);
    return planRequestUnit(unit.requestId, unit.subject, input);
  }
  const target = sweepTargets(policy()).find((t) => t.collection === unit.collection);
  if (!target) throw new Error(`no sweep target for ${unit.collection}`);
  return planSweepUnit(target, opts.sweepLimit ?? purgeSettings.sweepLimit(), input);
}

/** A dry run plans and applies the brake's arithmetic, writing nothing (no leases, no records, no evidence). */
async function dryRun(opts: PurgeRunOptions): Promise<JobSummary> {
  const plans: UnitPlan[] = [];
  const input = () => ({ planId: "dry-run", round: 0, nowMs: opts.nowMs, batchSize: opts.batchSize ?? purgeSettings.batchSize(), sink: discardSink() });
  for (const id of await candidateRequestIds(opts.nowMs, opts.maxRequests ?? purgeSettings.maxRequestsPerRun(), await readFence())) {
    const data = (await requestRef(id).get()).data();
    if (data) plans.push(await planRequestUnit(id, subjectOf(data), input()));
  }
  if (opts.sweep !== false) {
    for (const t of sweepTargets(policy())) {
      const p = await planSweepUnit(t, opts.sweepLimit ?? purgeSettings.sweepLimit(), input());
      if (p) plans.push(p);
    }
  }
  const verdicts = plans.length > 0 ? await judgeBrake(await dueDates(plans)) : [];
  const byKey = new Map(plans.map((p) => [p.unitKey, p]));
  const size = (unitKey: string) => Object.values(byKey.get(unitKey)?.deleteByClass ?? {}).reduce((a, b) => a + b, 0);
  const waiting = verdicts.flatMap((v) => (v.verdict === "WAIT" ? [{ unitKey: v.unitKey, runKey: v.runKey, wouldDelete: v.result.total, violations: v.result.violations }] : []));
  const deferred = verdicts.filter((v) => v.verdict === "DEFER").map((v) => v.unitKey);
  return {
    job: "nightlyPurge",
    dryRun: true,
    asOf: opts.asOfMs !== null ? new Date(opts.asOfMs).toISOString() : null,
    units: plans.map((p) => ({ unitKey: p.unitKey, kind: p.kind, delete: p.counts.delete, mask: p.counts.mask, retain: p.counts.retain, blocked: p.blockedCount })),
    wouldDelete: verdicts.reduce((n, v) => n + size(v.unitKey), 0),
    brake: {
      tripped: waiting.length > 0 || deferred.length > 0,
      // The units that would run, in order; a waiting set's key is the one approvePurgeRun names once a run has recorded it.
      admitted: verdicts.filter((v) => v.verdict === "ADMIT").map((v) => v.unitKey),
      waiting,
      deferred,
    },
  };
}

export async function runNightlyPurge(opts: PurgeRunOptions): Promise<JobSummary> {
  if (opts.dryRun) return dryRun(opts);
  const holder = holderFor(opts);
  const env = envFor(opts, holder);
  const cfg: RunConfig = {
    batchSize: opts.batchSize ?? purgeSettings.batchSize(),
    stepBatches: opts.stepBatches ?? purgeSettings.stepBatches(),
    fanOutThreshold: opts.fanOutThreshold ?? purgeSettings.fanOutThreshold(),
    chunkSteps: opts.chunkSteps ?? purgeSettings.chunkSteps(),
    enqueue: opts.enqueue ?? enqueueChunk,
  };
  const reports: UnitReport[] = [];
  const failures: { unitKey: string; error: unknown }[] = [];
  /** Runs one unit's work; its report (if any) is kept, a lost lease is a decision, any other error is collected. */
  const guarded = async (unit: LeasedUnit, work: () => Promise<UnitReport | null>): Promise<void> => {
    try {
      const r = await work();
      if (r) reports.push({ ...r, counts: await countsOf(unit.unitKey) });
    } catch (error) {
      if (error instanceof LeaseLostError) {
        log.warn("purge.lease.lost", { unitKey: unit.unitKey, owner: holder.owner });
        reports.push({ unitKey: unit.unitKey, kind: unit.kind, outcome: "LEASE_LOST" });
        return;
      }
      if (error instanceof RequestMovedOnError) {
        // The owner cancelled while this run held the request: it stops before writing anything.
        log.warn("purge.request.moved_on", { unitKey: unit.unitKey, state: error.state });
        await releaseLease(unit.leaseRef, holder);
        reports.push({ unitKey: unit.unitKey, kind: unit.kind, outcome: "MOVED_ON", reason: error.state });
        return;
      }
      reports.push({ unitKey: unit.unitKey, kind: unit.kind, outcome: "FAILED", reason: error instanceof Error ? error.message : String(error) });
      failures.push({ unitKey: unit.unitKey, error });
    }
  };

  // 0. Unfinished business that must never wait for a person: cancels interrupted in their restore, and
  //    subtree holds whose flagging stalled.
  const resumedCancels = await resumeCancellations(PURGE_ACTOR, opts.nowMs);
  const resumedHolds = await resumeHoldApplications(opts.applyHold ?? ((id: string) => applyHoldFlags(id, { budgetMs: 60_000 }).then(() => undefined)));

  // 1. Lease. Requests retained under a hold are taken again only when the holds changed since.
  const fenceGeneration = await readFence();
  const candidates = (await candidateRequestIds(opts.nowMs, opts.maxRequests ?? purgeSettings.maxRequestsPerRun(), fenceGeneration)).filter((id) => !opts.requestIds || opts.requestIds.includes(id));
  const leased: LeasedUnit[] = [];
  let skipped = 0;
  for (const id of candidates) {
    const u = await leaseRequest(id, holder, opts.nowMs, fenceGeneration);
    if (u) leased.push(u);
    else skipped++;
  }
  if (opts.sweep !== false) {
    for (const t of sweepTargets(policy())) {
      const u = await leaseSweep(t.collection, holder);
      if (u) leased.push(u);
      else skipped++;
    }
  }

  for (const u of leased) await fire(env, { point: "afterLease", unitKey: u.unitKey, round: u.previous?.round ?? 0, step: null, batch: null, paths: [] });

  // 2. Plan the fresh units; block requests the predicate refuses.
  const fresh: { unit: LeasedUnit; plan: UnitPlan }[] = [];
  for (const unit of leased.filter((u) => !u.resume)) {
    await guarded(unit, async () => {
      const plan = await planUnit(unit, opts, cfg);
      if (!plan) {
        await releaseLease(unit.leaseRef, holder);
        return { unitKey: unit.unitKey, kind: unit.kind, outcome: "NOTHING_TO_DO" };
      }
      if (plan.blockedCount > 0) {
        const reason = plan.blocked[0]!.reason;
        await blockUnit(unit, plan, reason, plan.blocked.map((b) => b.path), plan.blockedCount, env);
        return { unitKey: unit.unitKey, kind: unit.kind, outcome: "BLOCKED", reason };
      }
      fresh.push({ unit, plan });
      return null;
    });
  }

  // 3. The brake, unit by unit: only what trips it is held back; the rest run oldest due first.
  let brake: BrakeOutcome | null = null;
  let admitted = fresh;
  if (fresh.length > 0) {
    brake = await applyBrake(await dueDates(fresh.map((f) => f.plan)), env);
    for (const h of brake.heldBack) {
      const f = fresh.find((x) => x.unit.unitKey === h.unitKey)!;
      await releaseLease(f.unit.leaseRef, holder);
      reports.push({ unitKey: h.unitKey, kind: f.unit.kind, outcome: h.outcome, reason: h.reason });
    }
    const order = new Map(brake.admitted.map((k, i) => [k, i]));
    admitted = fresh.filter((f) => order.has(f.unit.unitKey)).sort((a, b) => order.get(a.unit.unitKey)! - order.get(b.unit.unitKey)!);
  }

  // 4. Resume, then run the fresh units (one rate limiter for all of them, so its ramp carries over).
  for (const unit of leased.filter((u) => u.resume)) {
    await guarded(unit, async () => ({ unitKey: unit.unitKey, kind: unit.kind, outcome: await drive(unit.previous!, cfg, env) }));
  }
  for (const { unit, plan } of admitted) {
    if (holder.clock() > env.deadlineMs) {
      // Out of time before it started: free it for the next run rather than hold it idle.
      await releaseLease(unit.leaseRef, holder);
      reports.push({ unitKey: unit.unitKey, kind: unit.kind, outcome: "STALE", reason: "BUDGET_EXHAUSTED" });
      continue;
    }
    await guarded(unit, () => runFresh(unit, plan, cfg, env));
  }

  const summary: JobSummary = {
    job: "nightlyPurge",
    dryRun: false,
    asOf: opts.asOfMs !== null ? new Date(opts.asOfMs).toISOString() : null,
    owner: holder.owner,
    candidates: candidates.length,
    leased: leased.length,
    skippedLeased: skipped,
    resumedCancels: resumedCancels.length,
    resumedHolds: resumedHolds.length,
    brake: brake ? brake.summary : null,
    units: reports,
    deleted: reports.reduce((n, r) => n + (r.counts?.deleted ?? 0), 0),
  };
  log.info("job.done", { job: "nightlyPurge", units: reports.length, failed: failures.length });
  if (failures.length > 0) {
    const first = failures[0]!;
    throw new Error(`PURGE_RUN_FAILED: ${failures.length} unit(s) failed (${failures.map((f) => f.unitKey).join(", ")})`, { cause: first.error });
  }
  return summary;
}

export interface ChunkOptions {
  clock?: () => number;
  parallelBatches?: number;
  leaseMs?: number;
  startOpsPerSecond?: number;
  maxOpsPerSecond?: number;
  budgetMs?: number;
  hook?: PurgeHook;
  enqueue?: Enqueue;
}

/**
 * One purgeChunk task: continues a fanned-out round from its checkpoint up to the end of its chunk, under
 * the chain's lease, then enqueues the next chunk (or finishes with the finalize step). A duplicate or
 * superseded task finds the checkpoint past it (or another generation) and does nothing; a failure throws,
 * so Cloud Tasks retries it, and the retry resumes from the checkpoint.
 */
export async function runPurgeChunk(task: PurgeChunkTask, opts: ChunkOptions = {}): Promise<"DONE" | "BLOCKED" | "CONTINUED" | "STALE"> {
  const cp = checkpointFrom((await checkpointRef(task.unitKey).get()).data());
  if (!cp || cp.round !== task.round || cp.phase !== "RUNNING" || cp.fanOut?.generation !== task.generation) {
    log.info("purge.chunk.stale", { unitKey: task.unitKey, round: task.round, generation: task.generation, start: task.start });
    return "STALE";
  }
  const clock = opts.clock ?? Date.now;
  const holder: LeaseHolder = { owner: chainOwner(task.unitKey, task.round, task.generation), ttlMs: opts.leaseMs ?? purgeSettings.leaseMs(), clock };
  // Business time: a time-travelled run (emulator only) keeps its asOf; otherwise the wall clock.
  const nowMs = task.asOfMs !== null && settings.onEmulator() ? task.nowMs : clock();
  const env: StepEnv = {
    holder,
    nowMs,
    asOfMs: task.asOfMs !== null && settings.onEmulator() ? task.asOfMs : null,
    actor: { type: "system", id: "purgeChunk" },
    startedBy: null,
    correlationId: task.correlationId,
    limiter: limiterFor(opts, Date.now),
    parallelBatches: opts.parallelBatches ?? purgeSettings.parallelBatches(),
    holdView: new HoldView(),
    hook: opts.hook,
    deadlineMs: clock() + (opts.budgetMs ?? DEFAULT_BUDGET_MS),
  };
  const total = stepCount(cp.layout, cp.groupSize);
  const range = chunkAt(Math.min(task.start, total - 1), total, cp.fanOut.stepsPerChunk);
  let result;
  try {
    result = await runSteps(cp.unitKey, cp.round, range.end, env, STEPS);
  } catch (err) {
    if (err instanceof LeaseLostError) {
      log.warn("purge.lease.lost", { unitKey: task.unitKey, owner: holder.owner });
      return "STALE";
    }
    throw err;
  }
  if (result === "DONE" || result === "BLOCKED") return result;
  if (result === "STALE") return "STALE";
  const after = checkpointFrom((await checkpointRef(task.unitKey).get()).data());
  if (!after || after.phase !== "RUNNING" || after.round !== task.round) return "STALE";
  await (opts.enqueue ?? enqueueChunk)({ ...task, start: after.nextStep });
  return "CONTINUED";
}
