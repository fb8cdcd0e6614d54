import pLimit from "p-limit";
import { readFence } from "../holds/index";
import type { JobSummary } from "../kernel/job";
import { LeaseLostError, leaseState, releaseLease } from "../platform/lease";
import { log } from "../platform/logs";
import { settings } from "../platform/settings";
import { purgeMayTake } from "../requests/rules/requests";
import { runNightlyPurge, type PurgeRunOptions } from "./job";
import { budgetShards, runKeyOf } from "./rules/run-budget";
import { admitInRun } from "./runner/brake";
import { blockRefused, configFor, countsOf, drive, envFor, holderFor, planUnit, runFresh, type UnitOutcome, type UnitReport, type UnitRunOptions } from "./runner/drive";
import { fire } from "./runner/env";
import { openRunBudget } from "./runner/run-budget";
import { enqueueRequest, type EnqueueRequest, type PurgeRequestTask } from "./runner/tasks";
import { dueRequestPages, leaseRequest, RequestMovedOnError, takeFactsOf } from "./runner/unit";
import { purgeSettings } from "./settings";
import { requestRef } from "./store";

/**
 * Account erasures at volume: the scheduled nightlyPurge enqueues one purgeRequest task per due deletion request
 * (RETENTION_PURGE_REQUEST_TASKS), and the queue runs RETENTION_PURGE_REQUEST_CONCURRENCY of them at a time. A task
 * runs the same leased unit a run would (lease, plan, brake, archive, round, steps, finalize), for exactly its
 * request; a subject over the fan-out threshold still goes on to the purgeChunk chain. What changes is the brake's
 * run-level limits: the tasks of one run share the run's budget in the database (purge/rules/run-budget.ts).
 */

/** Requests enqueued at once while a page is handed to the queue. */
const ENQUEUE_IN_FLIGHT = 16;

export interface FanOutOptions extends PurgeRunOptions {
  /** How each request is handed to the queue (default: the purgeRequest task queue). */
  enqueueRequest?: EnqueueRequest;
  /** Requests this run enqueues at most (default RETENTION_PURGE_MAX_REQUEST_TASKS). */
  maxRequestTasks?: number;
  /** Tasks that run at once, which sets the run's budget shards (default RETENTION_PURGE_REQUEST_CONCURRENCY). */
  concurrency?: number;
  /** Requests read per page of the intake query. */
  pageSize?: number;
}

/**
 * The scheduled run with its deletion requests fanned out:
 * 1. opens the run's brake budget (class sizes counted once, the policy's limits, one shard per concurrent task);
 * 2. pages through the due requests, oldest grace end first, and enqueues one purgeRequest task each, under an id
 *    derived from the request and the run, so a retried run or page queues nothing twice; it stops at
 *    `maxRequestTasks` or when its time budget is spent (the rest are the next run's, still oldest first);
 * 3. does the rest of a run here, without the requests: cancels and hold flagging to resume, and the policy
 *    sweeps, whose admission debits the same budget as the tasks.
 * A failure in step 3 is rethrown after the requests are queued, so a broken sweep never holds back erasures.
 */
export async function fanOutNightlyPurge(opts: FanOutOptions): Promise<JobSummary> {
  if (opts.dryRun) return runNightlyPurge(opts);
  const clock = opts.clock ?? Date.now;
  const startedAt = clock();
  const budgetMs = opts.budgetMs ?? 480_000;
  const correlationId = opts.correlationId ?? `purge-run:${startedAt}`;
  const runKey = runKeyOf(correlationId);
  const budget = await openRunBudget({ runKey, shards: budgetShards(opts.concurrency ?? purgeSettings.requestConcurrency()), nowMs: opts.nowMs, correlationId });

  const enqueue = opts.enqueueRequest ?? enqueueRequest;
  const max = opts.maxRequestTasks ?? purgeSettings.maxRequestTasks();
  const limit = pLimit(ENQUEUE_IN_FLIGHT);
  let enqueued = 0;
  let pages = 0;
  let stoppedBy: "MAX_REQUEST_TASKS" | "BUDGET_EXHAUSTED" | null = null;
  for await (const page of dueRequestPages(opts.nowMs, await readFence(), opts.pageSize)) {
    pages++;
    const take = page.slice(0, max - enqueued);
    await Promise.all(take.map((requestId) => limit(() => enqueue({ requestId, runKey, nowMs: opts.nowMs, asOfMs: opts.asOfMs, correlationId }))));
    enqueued += take.length;
    if (enqueued >= max) stoppedBy = "MAX_REQUEST_TASKS";
    else if (clock() - startedAt > budgetMs) stoppedBy = "BUDGET_EXHAUSTED";
    if (stoppedBy) break;
  }
  log.info("purge.requests.enqueued", { runKey, enqueued, pages, stoppedBy });

  let rest: JobSummary | null = null;
  let failure: Error | null = null;
  try {
    rest = await runNightlyPurge({ ...opts, correlationId, requests: false, runBudget: budget, budgetMs: Math.max(0, budgetMs - (clock() - startedAt)) });
  } catch (err) {
    failure = err instanceof Error ? err : new Error(String(err));
  }
  const summary: JobSummary = {
    ...(rest ?? { job: "nightlyPurge", dryRun: false, asOf: opts.asOfMs !== null ? new Date(opts.asOfMs).toISOString() : null }),
    requestTasks: { runKey, enqueued, pages, stoppedBy, shards: budget.shards },
  };
  if (failure) throw failure;
  return summary;
}

/** What one purgeRequest task did. BUSY: another delivery of a task holds the request now (retry later). */
export interface RequestTaskReport extends Omit<UnitReport, "outcome"> {
  outcome: UnitOutcome | "BUSY" | "NOT_TAKEN";
}

/**
 * Whether the task should be delivered again: another delivery holds the request (a duplicate running now, or a
 * crashed attempt whose lease has not expired: the retry takes over once it has), or the unit stopped at the
 * invocation's time budget with steps left (the retry resumes from the checkpoint).
 */
export const retryLater = (r: Pick<RequestTaskReport, "outcome">): boolean => r.outcome === "BUSY" || r.outcome === "RUNNING";

const REQUEST_OWNER = "purgeRequest";

/**
 * One purgeRequest task: the leased unit of exactly one deletion request, as a run would do it.
 * - The lease is taken in a transaction with a fresh owner per delivery, so of two deliveries of one task only
 *   one works; the other finds it BUSY (and is retried), or finds the request done or no longer due (NOT_TAKEN).
 * - A request whose round is RUNNING resumes from its checkpoint (or its fanned-out chain is handed over again).
 * - A fresh one is planned; a refusal blocks it; the brake admits it (`admitInRun`: alone, then the run's
 *   budget), keeps it waiting for approval, or defers it; then it runs like any unit, over the fan-out threshold
 *   through the purgeChunk chain.
 * Every write is fenced by the lease and the checkpoint (docs/PURGE-ENGINE.md), so a retry never repeats a batch.
 * A failure releases the lease (so that the retry starts at once) and throws.
 */
export async function runPurgeRequest(task: PurgeRequestTask, opts: UnitRunOptions = {}): Promise<RequestTaskReport> {
  const clock = opts.clock ?? Date.now;
  // Business time: a time-travelled run (emulator only) keeps its asOf; otherwise the wall clock.
  const travelled = task.asOfMs !== null && settings.onEmulator();
  const run = { nowMs: travelled ? task.nowMs : clock(), asOfMs: travelled ? task.asOfMs : null, actor: { type: "system", id: REQUEST_OWNER } as const, correlationId: task.correlationId ?? undefined };
  const holder = holderFor(opts, `${REQUEST_OWNER}:${task.requestId}`);
  const env = envFor({ ...opts, ...run }, holder, run.actor);
  const cfg = configFor(opts);
  const fence = await readFence();
  const unit = await leaseRequest(task.requestId, holder, run.nowMs, fence);
  const report = (outcome: RequestTaskReport["outcome"], reason?: string): RequestTaskReport => ({ unitKey: task.requestId, kind: "request", outcome, ...(reason ? { reason } : {}) });
  if (!unit) {
    const data = (await requestRef(task.requestId).get()).data();
    const owner = (data?.lease as { owner?: unknown } | undefined)?.owner;
    const busy = data !== undefined && purgeMayTake(takeFactsOf(data), run.nowMs, fence) && leaseState(data, holder.owner, clock()) === "taken" && typeof owner === "string" && owner.startsWith(`${REQUEST_OWNER}:`);
    log.info(busy ? "purge.request.busy" : "purge.request.task", { requestId: task.requestId, runKey: task.runKey, outcome: busy ? "BUSY" : "NOT_TAKEN" });
    return report(busy ? "BUSY" : "NOT_TAKEN");
  }
  await fire(env, { point: "afterLease", unitKey: unit.unitKey, round: unit.previous?.round ?? 0, step: null, batch: null, paths: [] });
  let result: RequestTaskReport;
  try {
    if (unit.resume) result = report(await drive(unit.previous!, cfg, env));
    else {
      const plan = await planUnit(unit, run, cfg);
      if (!plan) throw new Error(`request unit ${unit.unitKey} planned nothing`);
      const blocked = await blockRefused(unit, plan, env);
      if (blocked) result = blocked;
      else {
        const budget = await openRunBudget({ runKey: task.runKey, shards: budgetShards(purgeSettings.requestConcurrency()), nowMs: run.nowMs, correlationId: task.correlationId });
        const admission = await admitInRun(plan, budget, env);
        if (admission.verdict === "WAIT" || admission.verdict === "DEFER") {
          await releaseLease(unit.leaseRef, holder);
          result = report(admission.verdict === "WAIT" ? "BRAKE_REFUSED" : "BRAKE_DEFERRED", admission.reason);
        } else result = await runFresh(unit, plan, cfg, env);
      }
    }
  } catch (error) {
    if (error instanceof LeaseLostError) {
      log.warn("purge.lease.lost", { unitKey: unit.unitKey, owner: holder.owner });
      return report("LEASE_LOST");
    }
    if (error instanceof RequestMovedOnError) {
      log.warn("purge.request.moved_on", { unitKey: unit.unitKey, state: error.state });
      await releaseLease(unit.leaseRef, holder);
      return report("MOVED_ON", error.state);
    }
    // Free the request for the retry; if that fails too, the lease expires on its own. The first error is the one to report.
    await releaseLease(unit.leaseRef, holder).catch(() => false);
    throw error;
  }
  // Out of time with steps left (a unit under the fan-out threshold rarely is): free it for the retry.
  if (result.outcome === "RUNNING") await releaseLease(unit.leaseRef, holder);
  log.info("purge.request.task", { requestId: task.requestId, runKey: task.runKey, outcome: result.outcome });
  return { ...result, counts: await countsOf(unit.unitKey) };
}
