import type { JobOptions, JobSummary } from "../kernel/job";
import { PRIMARY_CELL } from "../kernel/policy";
import { inCell } from "../platform/firestore";
import { registryPolicy } from "../platform/registry";

/**
 * The governed databases a piece of work spans: every cell of the registry in force (the primary first), or the one
 * `only` names (UNKNOWN_DATABASE otherwise).
 */
export function cellsToVisit(only?: string | null): string[] {
  const whole = registryPolicy();
  if (only === undefined || only === null) return whole.cells();
  if (!whole.hasCell(only)) throw new Error(`UNKNOWN_DATABASE: the registry governs no database named ${only} (${whole.cells().join(", ")})`);
  return [only];
}

/**
 * Runs `work` in every cell (or the one named), one after another, and collects each cell's result; a cell's failure
 * is kept, the others still run, and the first failure is thrown after them.
 */
export async function inEveryCell<T>(work: (cell: string) => Promise<T>, only?: string | null): Promise<Record<string, T>> {
  const out: Record<string, T> = {};
  const failures: Error[] = [];
  for (const cell of cellsToVisit(only)) {
    try {
      out[cell] = await inCell(cell, () => work(cell));
    } catch (err) {
      failures.push(err instanceof Error ? err : new Error(`${cell}: ${String(err)}`));
    }
  }
  if (failures.length > 0) throw failures[0]!;
  return out;
}

/**
 * A job that runs per database (the audit, the evidence anchor, the expiry backfill), run in every governed
 * database: the whole engine's job in each cell, with that cell's collections, holds, evidence and reports. Its
 * summary is the primary's, with every other cell's under `cells`. Under one database it is the job itself.
 */
export function inEveryCellJob<O extends JobOptions>(job: (opts: O) => Promise<JobSummary>): (opts: O) => Promise<JobSummary> {
  return async (opts: O) => {
    const cells = registryPolicy().cells();
    if (cells.length === 1) return job(opts);
    const summaries = await inEveryCell(() => job(opts));
    const { [PRIMARY_CELL]: primary, ...others } = summaries;
    return { ...(primary as JobSummary), cells: others };
  };
}
