/**
 * The Storage emulator for tests: the real firebase-tools emulator the harness starts with `--only ...,storage`
 * (scripts/storage-emulator.mjs). A suite that imports this fails at once when it is not running.
 */
import type { File } from "@google-cloud/storage";
import { getStorage } from "firebase-admin/storage";
import { adminApp } from "../../functions/src/platform/firestore";
import { defaultBucket } from "../../functions/src/platform/storage";

const host = process.env.STORAGE_EMULATOR_HOST;
if (!host) {
  throw new Error(
    "Storage-backed tests need the Storage emulator (STORAGE_EMULATOR_HOST is unset). Run them under " +
      "`node scripts/emulators.mjs exec --only firestore,auth,storage -- vitest run --project emulator <files>`.",
  );
}

/** The Storage emulator's URL (STORAGE_EMULATOR_HOST, e.g. http://127.0.0.1:9199). */
export const storageEmulatorUrl = (): string => host;

/**
 * Deletes every object of this worker's project: its default bucket. Not the emulator's reset endpoint, which empties
 * every bucket, the other vitest worker's too (test/helpers/worker-project.ts). Hook-safe: takes no argument.
 */
export async function clearStorage(): Promise<void> {
  await clearBuckets([defaultBucket()]);
}

/** Deletes every object in the named buckets. */
export async function clearBuckets(buckets: readonly string[]): Promise<void> {
  for (const b of buckets) {
    // Listed and deleted one by one, so a delete that fails fails the clear (deleteFiles swallows errors).
    const [files] = await getStorage(adminApp()).bucket(b).getFiles();
    await Promise.all(files.map((f) => f.delete({ ignoreNotFound: true })));
  }
}

/** A bucket name of this worker's own: `name` with the worker's project id, so two workers never share it. */
export const workerBucket = (name: string): string => `${name}-${process.env.GCLOUD_PROJECT ?? "demo"}`;

export const storageFile = (bucket: string, name: string): File => getStorage(adminApp()).bucket(bucket).file(name);

/** Uploads `body` as `bucket/name` with custom metadata; returns the new generation. */
export async function putObject(bucket: string, name: string, body: string, metadata: Record<string, string> = {}): Promise<string> {
  const file = storageFile(bucket, name);
  await file.save(body, { resumable: false, metadata: { metadata } });
  const [m] = await file.getMetadata();
  return String(m.generation);
}

/**
 * Uploads `body` over `bucket/name` until the emulator gives it a generation other than `previous` (its generations
 * are upload times in milliseconds, so an upload within the same millisecond keeps the number). Returns the new one.
 */
export async function overwriteObject(bucket: string, name: string, previous: string, body: string): Promise<string> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const generation = await putObject(bucket, name, body);
    if (generation !== previous) return generation;
    await new Promise((r) => setTimeout(r, 2));
  }
  throw new Error(`the emulator kept generation ${previous} for ${bucket}/${name} over 50 uploads`);
}
