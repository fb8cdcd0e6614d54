// The emulator suites run two files at a time (vitest.config.mts). Each vitest worker gets a Firestore, Auth and
// Storage project of its own on the same emulators, so one file's reset (clearFirestore) or data never reaches a file
// running beside it: worker 1 keeps the harness's project id, worker N uses `<id>-wN`. Must be the first setup file,
// before any module reads the project id.
const pool = Number(process.env.VITEST_POOL_ID ?? "1");
const base = process.env.GCLOUD_PROJECT;
if (!base) throw new Error("GCLOUD_PROJECT is not set: run the emulator suites under scripts/emulators.mjs");
if (!Number.isInteger(pool) || pool < 1) throw new Error(`VITEST_POOL_ID must be a positive integer, got ${process.env.VITEST_POOL_ID}`);
if (pool > 1) {
  const own = `${base}-w${pool}`;
  process.env.GCLOUD_PROJECT = own;
  process.env.RETENTION_PROJECT_ID = own;
  if (process.env.GOOGLE_CLOUD_PROJECT) process.env.GOOGLE_CLOUD_PROJECT = own;
  // `firebase emulators:exec` also sets FIREBASE_CONFIG (project id and default bucket), which the Admin SDK and
  // platform/storage.ts#defaultBucket read: the worker's bucket is its own project's.
  const config = process.env.FIREBASE_CONFIG;
  if (config?.trimStart().startsWith("{")) {
    const parsed = JSON.parse(config) as Record<string, unknown>;
    process.env.FIREBASE_CONFIG = JSON.stringify({ ...parsed, projectId: own, storageBucket: `${own}.appspot.com`, databaseURL: `https://${own}.firebaseio.com` });
  }
}
