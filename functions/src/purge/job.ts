import { randomUUID } from "node:crypto";
import { chunkAt, stepCount } from "./rules/batches";
import { sweepTargets } from "./rules/sweep";
import { LeaseLostError, releaseLease, type LeaseHolder } from "../platform/lease";
import { log } from "../platform/logs";
import { applyBrake, dueDates, judgeBrake, type BrakeOutcome } from "./runner/brake";
import { fire, type StepEnv } from "./runner/env";
import { planRequestUnit, planSweepUnit, type UnitPlan } from "./runner/plan";
import { discardSink } from "./runner/records";
import { purgeSettings } from "./settings";
import { runSteps } from "./runner/step";
import { checkpointFrom, checkpointRef, leaseRefOf, requestRef } from "./store";
import { enqueueChunk, type PurgeChunkTask } from "./runner/tasks";
import { blockRefused, configFor, countsOf, DEFAULT_BUDGET_MS, drive, envFor, holderFor, limiterFor, planUnit, runFresh, STEPS, type UnitReport, type UnitRunOptions } from "./runner/drive";
import type { RunBudget } from "./runner/run-budget";
import { candidateRequestIds, chainOwner, handBackChunk, leaseChunk, leaseRequest, leaseSweep, RequestMovedOnError, subjectOf, type LeasedUnit } from "./runner/unit";
import { HoldView, readFence, applyHoldFlags, resumeHoldApplications, type ApplyHold } from "../holds/index";
import { resumeCancellations } from "../requests/index";
import { resumeGroupAccountDeletions } from "./runner/group-account";
import { policy } from "../platform/registry";
import { settings } from "../platform/settings";
import type { JobOptions, JobSummary } from "../kernel/job";
import { shredDueKeys, type ShredOptions, type ShredSummary } from "../shred/index";

export type { UnitOutcome, UnitReport } from "./runner/drive";

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

export interface PurgeRunOptions extends JobOptions, UnitRunOptions {
  sweepLimit?: number;
  maxRequests?: number;
  /** Take only these deletion requests (an erasure replay's); default: every request the run may take. */
  requestIds?: readonly string[];
  /** Take deletion requests at all (default true; false: a scheduled run that hands them to purgeRequest). */
  requests?: boolean;
  /** Run the policy sweep as well as the deletion requests (default true). */
  sweep?: boolean;
  /** The brake budget of a scheduled run whose requests run as tasks: what this run admits debits it too. */
  runBudget?: RunBudget;
  /** Run the archive's shred after the units (default: with the sweep). */
  shred?: boolean;
  /** Called after each data key's shred decision (tests stall or interrupt the shred there). */
  afterShredDecision?: ShredOptions["afterDecision"];
  /** How a stalled subtree hold's flagging is resumed (default: here, within a minute's budget). */
  applyHold?: ApplyHold;
}

const PURGE_ACTOR = { type: "system", id: "nightlyPurge" } as const;

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
    units: plans.map((p) => ({ unitKey: p.unitKey, kind: p.kind, delete: p.counts.delete, mask: p.counts.mask, retain: p.counts.retain, blocked: p.blockedCount, ...(p.counts.objects > 0 ? { objects: p.counts.objects } : {}) })),
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
  const holder = holderFor(opts, "nightlyPurge");
  const env = envFor(opts, holder, PURGE_ACTOR);
  const cfg = configFor(opts);
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
  await resumeGroupAccountDeletions(PURGE_ACTOR, opts.nowMs);
  const resumedHolds = await resumeHoldApplications(opts.applyHold ?? ((id: string) => applyHoldFlags(id, { budgetMs: 60_000 }).then(() => undefined)));

  // 1. Lease. Requests retained under a hold are taken again only when the holds changed since.
  //    Named requests are leased directly (leasing checks that the run may take each), without listing every candidate.
  const fenceGeneration = await readFence();
  const candidates =
    opts.requests === false ? [] : opts.requestIds ? [...opts.requestIds] : await candidateRequestIds(opts.nowMs, opts.maxRequests ?? purgeSettings.maxRequestsPerRun(), fenceGeneration);
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
      const blocked = await blockRefused(unit, plan, env);
      if (blocked) return blocked;
      fresh.push({ unit, plan });
      return null;
    });
  }

  // 3. The brake, unit by unit: only what trips it is held back; the rest run oldest due first.
  let brake: BrakeOutcome | null = null;
  let admitted = fresh;
  if (fresh.length > 0) {
    brake = await applyBrake(await dueDates(fresh.map((f) => f.plan)), env, opts.runBudget ?? null);
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

  // 5. The archive's shred (decision 0038): with the policy sweep, never in a run that takes only named requests.
  let shred: ShredSummary | null = null;
  if (opts.sweep !== false && !opts.requestIds && opts.shred !== false) {
    try {
      shred = await shredDueKeys({ nowMs: opts.nowMs, actor: PURGE_ACTOR, correlationId: env.correlationId, asOfMs: env.asOfMs, afterDecision: opts.afterShredDecision });
    } catch (error) {
      log.error("shred.failed", { error: error instanceof Error ? error.message : String(error) });
      failures.push({ unitKey: "archive-shred", error });
    }
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
    shred,
  };
  log.info("job.done", { job: "nightlyPurge", units: reports.length, failed: failures.length });
  if (failures.length > 0) {
    const first = failures[0]!;
    throw new Error(`PURGE_RUN_FAILED: ${failures.length} unit(s) failed (${failures.map((f) => f.unitKey).join(", ")})`, { cause: first.error });
  }
  return summary;
}

export type ChunkOptions = Pick<UnitRunOptions, "clock" | "parallelBatches" | "leaseMs" | "startOpsPerSecond" | "maxOpsPerSecond" | "budgetMs" | "hook" | "enqueue"> & {
  /** This delivery's lease owner, under the chain's (default: the chain's owner and a fresh id). */
  deliveryId?: string;
};

export type ChunkOutcome = "DONE" | "BLOCKED" | "CONTINUED" | "STALE" | "BUSY" | "LEASE_LOST";

/**
 * Whether a purgeChunk task should be delivered again: another delivery of its chain holds the lease now
 * (BUSY), or this delivery lost its lease mid-chunk (LEASE_LOST). A lost lease may be nobody's: the delivery
 * that lost it enqueues no next chunk, so without a retry nothing would run the rest of the round until the
 * next nightly run. The retry takes the lease once it is free, is BUSY while another delivery holds it, and
 * finds the round STALE when another runner took the unit over.
 */
export const chunkRetryLater = (outcome: ChunkOutcome): boolean => outcome === "BUSY" || outcome === "LEASE_LOST";

/**
 * One purgeChunk task: continues a fanned-out round from its checkpoint up to the end of its chunk, then
 * enqueues the next chunk (or finishes with the finalize step).
 * - Each delivery takes the chain's lease under an owner of its own (`leaseChunk`), as a purgeRequest task
 *   does: of two deliveries of one task only one works; the other is BUSY (and retried). A delivery that
 *   stalls past its lease loses it, to the next delivery or to nobody, and commits nothing more.
 * - When its chunk is done, or it fails, the delivery hands the lease back to the chain (`handBackChunk`), so
 *   the next chunk (or the retry) takes it at once. A delivery that lost its lease is retried too
 *   ({@link chunkRetryLater}).
 * A duplicate or superseded task finds the checkpoint past it (or another generation) and does nothing; a
 * failure throws, so Cloud Tasks retries it, and the retry resumes from the checkpoint.
 */
export async function runPurgeChunk(task: PurgeChunkTask, opts: ChunkOptions = {}): Promise<ChunkOutcome> {
  const cp = checkpointFrom((await checkpointRef(task.unitKey).get()).data());
  if (!cp || cp.round !== task.round || cp.phase !== "RUNNING" || cp.fanOut?.generation !== task.generation) {
    log.info("purge.chunk.stale", { unitKey: task.unitKey, round: task.round, generation: task.generation, start: task.start });
    return "STALE";
  }
  const clock = opts.clock ?? Date.now;
  const chain = chainOwner(task.unitKey, task.round, task.generation);
  const holder: LeaseHolder = { owner: `${chain}:${opts.deliveryId ?? randomUUID()}`, ttlMs: opts.leaseMs ?? purgeSettings.leaseMs(), clock };
  const leaseRef = leaseRefOf(cp);
  const leased = await leaseChunk(leaseRef, chain, holder);
  if (leased !== "LEASED") {
    log.info(leased === "BUSY" ? "purge.chunk.busy" : "purge.chunk.stale", { unitKey: task.unitKey, round: task.round, generation: task.generation, start: task.start });
    return leased;
  }
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
    // The finalize step released the lease with the round; otherwise it goes back to the chain.
    if (result !== "DONE" && result !== "BLOCKED") await handBackChunk(leaseRef, chain, holder);
  } catch (err) {
    if (err instanceof LeaseLostError) {
      log.warn("purge.lease.lost", { unitKey: task.unitKey, owner: holder.owner });
      return "LEASE_LOST";
    }
    // Free the chain for the retry; if that fails too, the lease expires on its own. The first error is the one to report.
    await handBackChunk(leaseRef, chain, holder).catch(() => undefined);
    throw err;
  }
  if (result === "DONE" || result === "BLOCKED") return result;
  if (result === "STALE") return "STALE";
  const after = checkpointFrom((await checkpointRef(task.unitKey).get()).data());
  if (!after || after.phase !== "RUNNING" || after.round !== task.round) return "STALE";
  await (opts.enqueue ?? enqueueChunk)({ ...task, start: after.nextStep });
  return "CONTINUED";
}
