import { applyHoldFlags, resumeHoldPlacements, type ApplyHold } from "../holds/index";
import type { Actor } from "../evidence/rules";
import type { JobSummary } from "../kernel/job";
import { PRIMARY_CELL } from "../kernel/policy";
import { inCell } from "../platform/firestore";
import { registryPolicy } from "../platform/registry";
import { settings } from "../platform/settings";
import {
  enqueueRequestTask,
  recordErasureCompletions,
  runPurgeRequest,
  type CompletionSummary,
  type EnqueueRequest,
  type PurgeRequestTask,
  type PurgeRunOptions,
  type RequestTaskReport,
  type UnitRunOptions,
} from "../purge/index";
import { cellsOfRecord, followRecordInCells, outstandingRecords, readCellRequest, settleIfDone } from "../requests/index";
import { recordTaken } from "../requests/rules/cells";
import { parseRequestState } from "../requests/rules/requests";
import { finishRecordAccounts } from "./accounts";

/**
 * The purge across several governed databases (docs/decisions/0036-several-databases.md): the whole engine runs
 * in each cell unchanged (`inCell`), and what spans cells is done here, between the cells' runs: cell requests
 * following their request of record, their release once the primary's purge has taken it, and the Auth accounts
 * once every cell is done.
 */

/** Whether the registry in force governs more than one database. */
export const severalCells = (): boolean => registryPolicy().cells().length > 1;

/** The other cells, in the registry's order. */
const otherCells = (): string[] => registryPolicy().cells().filter((c) => c !== PRIMARY_CELL);

export interface ReconcileSummary {
  /** Requests of record looked at (`cellsOutstanding`). */
  records: number;
  /** Of them, settled by this pass (nothing more to follow or delete). */
  settled: number;
  failed: number;
}

/**
 * The nightly reconciliation of requests across cells: every request of record that still has something to follow
 * (`cellsOutstanding`, set in the transaction that creates it) is followed in its cells (opened, approved, cancelled,
 * released: requests/cells.ts#followRecordInCells) and, once every cell is done, its Auth accounts go
 * (`finishRecordAccounts`). Failures are counted and the first is thrown after the others were tried.
 */
export async function reconcileCells(actor: Actor, nowMs: number): Promise<ReconcileSummary> {
  const summary: ReconcileSummary = { records: 0, settled: 0, failed: 0 };
  if (!severalCells()) return summary;
  const errors: Error[] = [];
  await inCell(PRIMARY_CELL, async () => {
    for await (const page of outstandingRecords()) {
      for (const requestId of page) {
        summary.records++;
        try {
          await followRecordInCells(requestId, actor, nowMs);
          await finishRecordAccounts(requestId, actor, nowMs);
          if (await settleIfDone(requestId)) summary.settled++;
        } catch (err) {
          summary.failed++;
          errors.push(err instanceof Error ? err : new Error(String(err)));
        }
      }
    }
  });
  if (errors.length > 0) throw errors[0]!;
  return summary;
}

/** Runs `work`, keeping its failure for later so the other cells still run. */
async function guarded<T>(failures: Error[], work: () => Promise<T>): Promise<T | null> {
  try {
    return await work();
  } catch (err) {
    failures.push(err instanceof Error ? err : new Error(String(err)));
    return null;
  }
}

/**
 * The nightly purge job across cells:
 * 0. the scope holds whose placement in their other cells was interrupted are finished, before any cell purges;
 * 1. the requests of record are reconciled with their cells;
 * 2. the primary's purge runs (its requests of record, its sweeps);
 * 3. reconciled again: the cell requests of the records it took are released (with tasks, the primary's own
 *    purgeRequest task releases them and enqueues theirs: `runPurgeRequestTask`);
 * 4. each other cell's purge runs in that cell (its released cell requests, its sweeps, its cancels and holds to
 *    resume), with its own fence, brake, evidence and erasure-ledger entries;
 * 5. reconciled again: the Auth accounts of the records whose cells are all done;
 * 6. ERASURE_COMPLETE in every other cell, then in the primary, whose request of record waits for its cells'.
 * A cell's failure is kept and thrown after the rest ran (the schedule retries; every step is idempotent). A dry run
 * plans in every cell and writes nothing.
 */
export async function runNightlyAcrossCells(opts: PurgeRunOptions, purgeRun: (opts: PurgeRunOptions) => Promise<JobSummary>): Promise<JobSummary> {
  const failures: Error[] = [];
  const apply: ApplyHold = opts.applyHold ?? ((id: string) => applyHoldFlags(id, { budgetMs: 60_000 }).then(() => undefined));
  const reconcile = () => (opts.dryRun ? Promise.resolve(null) : guarded(failures, () => reconcileCells(opts.actor, opts.nowMs)));
  const resumedPlacements = opts.dryRun ? [] : ((await guarded(failures, () => resumeHoldPlacements(apply))) ?? []);
  const before = await reconcile();
  const primary = await guarded(failures, () => inCell(PRIMARY_CELL, () => purgeRun(opts)));
  await reconcile();
  const cells: Record<string, JobSummary | null> = {};
  for (const cell of otherCells()) cells[cell] = await guarded(failures, () => inCell(cell, () => purgeRun(opts)));
  const after = await reconcile();
  const completions: Record<string, CompletionSummary | null> = {};
  for (const cell of [...otherCells(), PRIMARY_CELL]) completions[cell] = await guarded(failures, () => inCell(cell, () => recordErasureCompletions(opts)));
  if (failures.length > 0 && primary === null && Object.values(cells).every((c) => c === null)) throw failures[0]!;
  const summary: JobSummary = {
    ...(primary ?? { job: "nightlyPurge", dryRun: opts.dryRun, asOf: opts.asOfMs !== null ? new Date(opts.asOfMs).toISOString() : null }),
    erasureComplete: completions[PRIMARY_CELL] ?? null,
    cells: Object.fromEntries(otherCells().map((c) => [c, { ...(cells[c] ?? { failed: true }), erasureComplete: completions[c] ?? null }])),
    reconciled: { before, after, resumedHoldPlacements: resumedPlacements.length },
  };
  if (failures.length > 0) {
    const first = failures[0];
    throw new Error(`PURGE_RUN_FAILED: ${failures.length} step(s) across databases failed`, { cause: first });
  }
  return summary;
}

/**
 * One purgeRequest task, in its cell (`task.database`, absent for the primary): the leased unit of one request, as
 * in one database (purge/request-tasks.ts#runPurgeRequest). Then what spans cells: the primary's task, once its
 * request of record has been taken, releases the cell requests and enqueues a task for each (same run key, so a
 * retried task queues nothing twice); a cell's task, once done, lets the request of record delete the Auth
 * accounts if every cell is done. A failure there throws (the task is retried: its purge finds nothing left to take,
 * and the follow-up runs again).
 */
export async function runPurgeRequestTask(task: PurgeRequestTask, opts: UnitRunOptions & { enqueueRequest?: EnqueueRequest } = {}): Promise<RequestTaskReport> {
  const cell = task.database ?? PRIMARY_CELL;
  if (!registryPolicy().hasCell(cell)) throw new Error(`UNKNOWN_DATABASE: a purgeRequest task for database ${cell}, which the registry does not govern`);
  const report = await inCell(cell, () => runPurgeRequest(task, opts));
  if (!severalCells()) return report;
  const actor: Actor = { type: "system", id: "purgeRequest" };
  // Business time as the task's purge had it: a time-travelled run's (emulator only), otherwise the wall clock.
  const nowMs = task.asOfMs !== null && settings.onEmulator() ? task.nowMs : Date.now();
  if (cell === PRIMARY_CELL) {
    const record = await readCellRequest(task.requestId, PRIMARY_CELL);
    const cells = cellsOfRecord(record.data());
    if (cells.length > 0 && recordTaken(parseRequestState(record.get("state")))) {
      await followRecordInCells(task.requestId, actor, nowMs);
      const { database: _primary, ...base } = task;
      for (const c of cells) await inCell(c, () => (opts.enqueueRequest ?? enqueueRequestTask)(base));
    }
  }
  await finishRecordAccounts(task.requestId, actor, nowMs);
  return report;
}


