import { AsyncLocalStorage } from "node:async_hooks";
import { getApps, initializeApp, type App } from "firebase-admin/app";
import { getFirestore, type Firestore } from "firebase-admin/firestore";
import { PRIMARY_CELL } from "../kernel/policy";
import { settings } from "./settings";
import { retryClosedTransaction } from "./transactions";

let app: App | undefined;
const dbs = new Map<string, Firestore>();

/** What an `inDatabase` or `inCell` scope binds: the physical database `db()` resolves to, and whose cell it is. */
interface Binding {
  databaseId: string;
  /** The governed database (logical name) the work is for: a restored copy is still its cell's. */
  cell: string;
}
/** The binding of the enclosing `inDatabase`/`inCell` scope, for every `db()` call made inside it. */
const scope = new AsyncLocalStorage<Binding>();

export function adminApp(): App {
  app ??= getApps()[0] ?? initializeApp({ projectId: settings.projectId() });
  return app;
}

/**
 * The governed database (configurable: it is not always `(default)`), created lazily and memoised. Inside an
 * `inDatabase` scope it is the scope's database. Its `runTransaction` runs a transaction again when the datastore
 * closed it under contention before it committed anything (platform/transactions.ts#retryClosedTransaction: the
 * emulator's answer where production's is ABORTED, which the SDK retries itself), for every transaction alike.
 */
export function db(databaseId: string = governedDatabaseId()): Firestore {
  let instance = dbs.get(databaseId);
  if (!instance) {
    instance = databaseId === "(default)" ? getFirestore(adminApp()) : getFirestore(adminApp(), databaseId);
    instance.settings({ ignoreUndefinedProperties: true });
    const run = instance.runTransaction.bind(instance);
    instance.runTransaction = (body, options) => retryClosedTransaction(() => run(body, options));
    dbs.set(databaseId, instance);
  }
  return instance;
}

/** The database `db()` resolves to here (the enclosing `inDatabase`/`inCell` scope's, else the primary's setting). */
export const governedDatabaseId = (): string => scope.getStore()?.databaseId ?? settings.databaseId();

/**
 * The governed database (logical name, kernel/policy.ts#PRIMARY_CELL for the primary) the work in hand is for: the
 * cell whose part of the registry `platform/registry.ts#policy()` shows (docs/decisions/0036-several-databases.md).
 */
export const currentCell = (): string => scope.getStore()?.cell ?? PRIMARY_CELL;

/**
 * Runs `work` with `db()` bound to another database of the project: how an engine written against "the governed
 * database" (the purge, the request service) runs against a restored copy. The copy is of the cell the work is
 * already in (the primary, outside any scope). The binding follows the work's own async calls, and nothing outside it
 * sees it.
 */
export function inDatabase<T>(databaseId: string, work: () => Promise<T>): Promise<T> {
  return scope.run({ databaseId, cell: currentCell() }, work);
}

/**
 * Runs `work` in a cell: a governed database of the registry by logical name (the primary, or one of its
 * `databases`), with `db()` bound to its physical database (RETENTION_DATABASES), or to `databaseId` (a restored copy
 * of that cell), and `policy()` showing that cell's part of the registry. Every transaction stays within the cell's
 * database: the engine's safety arguments (the hold fence, evidence committed with the deletes) hold per cell.
 * Work already in that cell (without `databaseId`) keeps its binding: a restored copy stays the copy.
 */
export function inCell<T>(cell: string, work: () => Promise<T>, databaseId?: string): Promise<T> {
  if (databaseId === undefined && cell === currentCell()) return work();
  return scope.run({ databaseId: databaseId ?? settings.cellDatabaseId(cell), cell }, work);
}

export const COLLECTIONS = {
  deletionRequests: "deletionRequests",
  retentionHolds: "retentionHolds",
  deletionAudits: "deletionAudits",
  processedEvents: "processedEvents",
  archives: "archives",
  retentionJobs: "retentionJobs",
  retentionReports: "retentionReports",
  /** A subject's access exports (access/), and their parts in the `exportParts` subcollection; both TTL-deleted. */
  dataExports: "dataExports",
  /** The processors' outbox: one deletion notice per request and processor (docs/decisions/0039-processors.md). */
  processorNotices: "processorNotices",
  /** In the ledger database (settings.ledgerDatabaseId), never in the governed one. */
  erasureLedger: "erasureLedger",
} as const;
