import { getApps, initializeApp, type App } from "firebase-admin/app";
import { getFirestore, type Firestore } from "firebase-admin/firestore";
import { settings } from "./settings";

let app: App | undefined;
const dbs = new Map<string, Firestore>();

export function adminApp(): App {
  app ??= getApps()[0] ?? initializeApp({ projectId: settings.projectId() });
  return app;
}

/** The governed database (configurable: it is not always `(default)`), created lazily and memoised. */
export function db(databaseId: string = settings.databaseId()): Firestore {
  let instance = dbs.get(databaseId);
  if (!instance) {
    instance = databaseId === "(default)" ? getFirestore(adminApp()) : getFirestore(adminApp(), databaseId);
    instance.settings({ ignoreUndefinedProperties: true });
    dbs.set(databaseId, instance);
  }
  return instance;
}

export const COLLECTIONS = {
  deletionRequests: "deletionRequests",
  retentionHolds: "retentionHolds",
  deletionAudits: "deletionAudits",
  processedEvents: "processedEvents",
  archives: "archives",
  retentionJobs: "retentionJobs",
  retentionReports: "retentionReports",
} as const;
