import { AsyncLocalStorage } from "node:async_hooks";
import { getApps, initializeApp, type App } from "firebase-admin/app";
import { getFirestore, type Firestore } from "firebase-admin/firestore";
import { settings } from "./settings";
import { retryClosedTransaction } from "./transactions";

let app: App | undefined;
const dbs = new Map<string, Firestore>();
/** The database an `inDatabase` scope names, for every `db()` call made inside it. */
const scope = new AsyncLocalStorage<string>();

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
export function db(databaseId: string = scope.getStore() ?? settings.databaseId()): Firestore {
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

/** The database `db()` resolves to here (the enclosing `inDatabase` scope's, else the setting). */
export const governedDatabaseId = (): string => scope.getStore() ?? settings.databaseId();

/**
 * Runs `work` with `db()` bound to another database of the project: how an engine written against "the governed
 * database" (the purge, the request service) runs against a restored copy. The binding follows the work's own
 * async calls, and nothing outside it sees it.
 */
export function inDatabase<T>(databaseId: string, work: () => Promise<T>): Promise<T> {
  return scope.run(databaseId, work);
}

export const COLLECTIONS = {
  deletionRequests: "deletionRequests",
  retentionHolds: "retentionHolds",
  deletionAudits: "deletionAudits",
  processedEvents: "processedEvents",
  archives: "archives",
  retentionJobs: "retentionJobs",
  retentionReports: "retentionReports",
  /** In the ledger database (settings.ledgerDatabaseId), never in the governed one. */
  erasureLedger: "erasureLedger",
} as const;
