// What spans several governed databases (docs/decisions/0036-several-databases.md): the nightly job's steps between
// the cells' runs, the per-request task's follow-ups, the Auth accounts of a request across cells, and the jobs and
// evidence checks that run in every cell. Requests and holds follow their records in their own wings
// (requests/cells.ts, holds/cells.ts).
export { finishRecordAccounts, type AccountsOutcome } from "./accounts";
export { reconcileCells, runNightlyAcrossCells, runPurgeRequestTask, severalCells, type ReconcileSummary } from "./purge";
export { cellsToVisit, inEveryCell, inEveryCellJob } from "./jobs";
export { bundleDirOf, bundlesIn, CELL_BUNDLES_DIR, explainAcrossCells, exportAcrossCells, verifyAcrossCells } from "./evidence";
