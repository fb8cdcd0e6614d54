import type { File, FileMetadata, Storage } from "@google-cloud/storage";
import { resolveBucket, type DEFAULT_BUCKET } from "../kernel/storage-map";
import type { StorageEntry } from "../kernel/policy-schema";
import { adminApp } from "./firestore";
import { adminStorage, cloudStorage } from "./lazy-libraries";
import { setting, settings } from "./settings";

/**
 * Cloud Storage objects, for the engine: list what lies under a prefix, read one object, delete it only while it
 * is still the version a decision was made on, and mark it held. Every operation names an object by bucket, name
 * and generation, so evidence can say exactly which bytes went (docs/STORAGE.md).
 *
 * Why each write reads first: a hold marker is custom metadata, which Cloud Storage does not enforce, so only a
 * read tells a delete that the object is held; and the Storage emulator ignores preconditions, so only a read tells
 * it that the object changed. The write then carries `ifGenerationMatch` and `ifMetagenerationMatch` from that
 * read: in production they close the gap between the read and the write (a new version, or a hold marked
 * meanwhile, bumps one of them and the write fails with 412).
 */

/** An object as the engine sees it. `generation` and `metageneration` are decimal strings (int64 in the API). */
export interface StorageObject {
  bucket: string;
  name: string;
  /** The version of the object's bytes: a new upload to the same name gets a new generation. */
  generation: string;
  /** The version of its metadata within a generation: a hold marker set or cleared bumps it. */
  metageneration: string;
  size: number;
  /** Base64 MD5 of the bytes; null for composite objects, which have none. */
  md5Hash: string | null;
  /** Custom metadata, hold markers included. */
  metadata: Record<string, string>;
  /** Cloud Storage's own holds, as the server reports them (the emulator never reports them: docs/STORAGE.md). */
  temporaryHold?: boolean;
  eventBasedHold?: boolean;
  /** The holds whose marker the object carries (see `placeHoldMarker`). */
  holdIds: string[];
}

/** One version of one object: what a decision to delete or hold was made on. */
export interface ObjectRef {
  bucket: string;
  name: string;
  generation: string;
}

export type DeleteOutcome =
  /** The delete was not sent: `mayStart` said no (a delete window closing). Nothing was deleted. */
  | { outcome: "not-started" }
  /** This generation was deleted. */
  | { outcome: "deleted"; generation: string }
  /** No object has this name any more. */
  | { outcome: "gone" }
  /** Another generation has the name now; `current` is it (null when only a failed precondition said so). */
  | { outcome: "changed"; current: StorageObject | null }
  /** The generation is still there but held (a hold marker, or Cloud Storage's own hold); nothing was deleted. */
  | { outcome: "held"; current: StorageObject };

export type MarkOutcome =
  /** The marker is set (or cleared) on this generation; `object` is the object after the write. */
  | { outcome: "marked" | "cleared"; object: StorageObject }
  | { outcome: "gone" }
  | { outcome: "changed"; current: StorageObject | null };

/** Objects per list page: the JSON API's maximum. */
export const MAX_PAGE_SIZE = 1000;
/** The custom metadata key of one hold's marker. */
export const HOLD_MARKER_PREFIX = "retention-hold-";
/**
 * Set while the engine holds Cloud Storage's `temporaryHold` on the object, so releasing the last marker clears
 * only a hold the engine placed, never one someone else had set before.
 */
export const TEMPORARY_HOLD_OWNER_KEY = "retention-temporary-hold";

const HOLD_ID = /^[A-Za-z0-9_-]{1,128}$/;
/** A write that lost a race with another metadata write is read and tried again this many times. */
const MARK_ATTEMPTS = 5;

const bucketOf = (bucket: string) => adminStorage().getStorage(adminApp()).bucket(bucket);
const fileOf = (ref: { bucket: string; name: string }): File => bucketOf(ref.bucket).file(ref.name);

/** The HTTP status of a Cloud Storage client error, if it is one. */
function statusOf(err: unknown): number | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "number" ? code : undefined;
}

function toObject(bucket: string, m: FileMetadata): StorageObject {
  if (m.name === undefined || m.generation === undefined) throw new Error(`Cloud Storage returned an object without name or generation in ${bucket}`);
  const metadata: Record<string, string> = {};
  for (const [k, v] of Object.entries(m.metadata ?? {})) if (v !== null && v !== undefined) metadata[k] = String(v);
  const holdIds = Object.keys(metadata)
    .filter((k) => k.startsWith(HOLD_MARKER_PREFIX))
    .map((k) => k.slice(HOLD_MARKER_PREFIX.length))
    .sort();
  return {
    bucket: m.bucket ?? bucket,
    name: m.name,
    generation: String(m.generation),
    metageneration: String(m.metageneration ?? "1"),
    size: Number(m.size ?? 0),
    md5Hash: m.md5Hash ?? null,
    metadata,
    ...(typeof m.temporaryHold === "boolean" ? { temporaryHold: m.temporaryHold } : {}),
    ...(typeof m.eventBasedHold === "boolean" ? { eventBasedHold: m.eventBasedHold } : {}),
    holdIds,
  };
}

/** Whether the object is held: a hold marker, or one of Cloud Storage's own holds. */
export const isObjectHeld = (o: StorageObject): boolean => o.holdIds.length > 0 || o.temporaryHold === true || o.eventBasedHold === true;

/**
 * Every object whose name starts with `prefix` in `bucket`, in name order, a page at a time. A prefix matches
 * names, not folders: `files/u1` also matches `files/u10/a`, so a subject's folder is listed as `files/u1/`. An
 * empty prefix (the whole bucket) is refused.
 */
export async function* listObjects(bucket: string, prefix: string, pageSize: number = MAX_PAGE_SIZE): AsyncGenerator<StorageObject[]> {
  if (prefix.length === 0) throw new Error(`listObjects needs a prefix: listing all of ${bucket} is refused`);
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > MAX_PAGE_SIZE) throw new Error(`pageSize must be 1..${MAX_PAGE_SIZE}, not ${pageSize}`);
  let pageToken: string | undefined;
  do {
    const [files, next] = await bucketOf(bucket).getFiles({ prefix, maxResults: pageSize, autoPaginate: false, ...(pageToken ? { pageToken } : {}) });
    const page = files.map((f) => toObject(bucket, f.metadata));
    if (page.length > 0) yield page;
    pageToken = (next as { pageToken?: string } | null | undefined)?.pageToken;
  } while (pageToken);
}

/** One object's current metadata, or null when no object has the name. */
export async function readObject(bucket: string, name: string): Promise<StorageObject | null> {
  try {
    const [m] = await fileOf({ bucket, name }).getMetadata();
    return toObject(bucket, m);
  } catch (err) {
    if (statusOf(err) === 404) return null;
    throw err;
  }
}

/** How a delete inside a delete window is sent (docs/HOLD-FENCE.md, Cloud Storage objects). */
export interface WindowedDelete {
  /** Asked right before the delete request goes out (after the read): false sends nothing (`not-started`). */
  mayStart: () => boolean;
  /** The delete request's own timeout, with no automatic retry: it ends (answered or abandoned) within this. */
  timeoutMs: number;
}

/**
 * Deletes `ref.generation` of the object, and nothing else: not a newer generation that took the name, and not a
 * held one. A Cloud Storage error other than "not found" or "precondition failed" is thrown. With `windowed`, the
 * delete request is sent only when `mayStart` allows it, once, with its timeout (a window's deletes must be over
 * by its end); without it, with the client's defaults.
 */
export async function deleteObjectIfUnchanged(ref: ObjectRef, windowed?: WindowedDelete): Promise<DeleteOutcome> {
  const current = await readObject(ref.bucket, ref.name);
  if (!current) return { outcome: "gone" };
  if (current.generation !== ref.generation) return { outcome: "changed", current };
  if (isObjectHeld(current)) return { outcome: "held", current };
  if (windowed && !windowed.mayStart()) return { outcome: "not-started" };
  try {
    const file = windowed ? windowClient(windowed.timeoutMs).bucket(ref.bucket).file(ref.name) : fileOf(ref);
    await file.delete({ ifGenerationMatch: current.generation, ifMetagenerationMatch: current.metageneration });
    return { outcome: "deleted", generation: current.generation };
  } catch (err) {
    if (statusOf(err) === 404) return { outcome: "gone" };
    // Production only (the emulator ignores preconditions): a new generation, or a metadata write such as a hold
    // marker, since the read. Said as "changed"; the caller reads again and decides again.
    if (statusOf(err) === 412) return { outcome: "changed", current: null };
    throw err;
  }
}

const windowClients = new Map<number, Storage>();

/**
 * The client a delete window's deletes go through: the same credentials as the Admin SDK's (Application Default
 * Credentials, or the emulator), but one attempt per request and a timeout, so a delete sent inside the window is
 * over (answered, or abandoned by the client) before the window ends. The default client retries a conditional
 * delete for up to ten minutes, which no window could bound.
 */
function windowClient(timeoutMs: number): Storage {
  let c = windowClients.get(timeoutMs);
  if (!c) {
    // firebase-admin's Storage turns FIREBASE_STORAGE_EMULATOR_HOST into STORAGE_EMULATOR_HOST, which this client reads.
    adminStorage().getStorage(adminApp());
    c = new (cloudStorage().Storage)({ projectId: settings.projectId(), timeout: timeoutMs, retryOptions: { autoRetry: false, maxRetries: 0 } });
    windowClients.set(timeoutMs, c);
  }
  return c;
}

/**
 * Up to `limit` objects under `prefix` whose names come after `after` (null: from the start), in name order: how a
 * resumable walk (a hold's flagging, its release, the audit) takes its next batch from a cursor. `startOffset`
 * lets production start at the cursor; the names are filtered here too, because the emulator ignores it.
 */
export async function listObjectsAfter(bucket: string, prefix: string, after: string | null, limit: number): Promise<StorageObject[]> {
  if (prefix.length === 0) throw new Error(`listObjectsAfter needs a prefix: listing all of ${bucket} is refused`);
  const out: StorageObject[] = [];
  let pageToken: string | undefined;
  do {
    const [files, next] = await bucketOf(bucket).getFiles({
      prefix,
      maxResults: MAX_PAGE_SIZE,
      autoPaginate: false,
      ...(after !== null ? { startOffset: after } : {}),
      ...(pageToken ? { pageToken } : {}),
    });
    for (const f of files) {
      const o = toObject(bucket, f.metadata);
      if (after !== null && o.name <= after) continue;
      out.push(o);
      if (out.length >= limit) return out;
    }
    pageToken = (next as { pageToken?: string } | null | undefined)?.pageToken;
  } while (pageToken);
  return out;
}

/**
 * The "folders" directly under `prefix` (names up to the next `/`, as Cloud Storage's delimiter listing gives
 * them), at most `limit`, and how many objects lie directly under it (not in a folder): how `retention discover` and
 * the erasure replay find the ids a bucket's paths carry. An empty prefix lists the bucket's top level.
 */
export async function listFolders(bucket: string, prefix: string, limit: number): Promise<{ folders: string[]; truncated: boolean; objectsHere: number }> {
  const folders: string[] = [];
  let objectsHere = 0;
  let pageToken: string | undefined;
  do {
    const [files, next, response] = await bucketOf(bucket).getFiles({ ...(prefix ? { prefix } : {}), delimiter: "/", maxResults: MAX_PAGE_SIZE, autoPaginate: false, ...(pageToken ? { pageToken } : {}) });
    objectsHere += files.length;
    for (const p of ((response as { prefixes?: string[] } | undefined)?.prefixes ?? []).sort()) {
      if (folders.length >= limit) return { folders, truncated: true, objectsHere };
      folders.push(p);
    }
    pageToken = (next as { pageToken?: string } | null | undefined)?.pageToken;
  } while (pageToken);
  return { folders, truncated: false, objectsHere };
}

/**
 * One object's bytes, with the metadata of the generation they belong to: read, downloaded, read again, so the
 * bytes are known to be that generation's (a new upload in between is read again, up to 3 times). Null: gone.
 */
export async function downloadObject(bucket: string, name: string): Promise<{ object: StorageObject; bytes: Buffer } | null> {
  for (let attempt = 1; attempt <= 3; attempt++) {
    const before = await readObject(bucket, name);
    if (!before) return null;
    let bytes: Buffer;
    try {
      [bytes] = await fileOf({ bucket, name }).download();
    } catch (err) {
      if (statusOf(err) === 404) return null;
      throw err;
    }
    const after = await readObject(bucket, name);
    if (after && after.generation === before.generation) return { object: after, bytes };
  }
  throw new Error(`gs://${bucket}/${name} changed while it was read, three times`);
}

/**
 * The project's default bucket, for a storage entry's `(default)`: RETENTION_STORAGE_BUCKET when it names one,
 * else the Admin SDK's (the app's `storageBucket` option, else FIREBASE_CONFIG's, which Cloud Functions sets),
 * else `<project>.appspot.com`.
 */
export function defaultBucket(): string {
  const configured = setting("storageBucket");
  if (configured !== "" && configured !== ("(default)" satisfies typeof DEFAULT_BUCKET)) return configured;
  const fromApp = adminApp().options.storageBucket;
  if (typeof fromApp === "string" && fromApp !== "") return fromApp;
  try {
    const fromConfig = (JSON.parse(process.env.FIREBASE_CONFIG ?? "{}") as { storageBucket?: unknown }).storageBucket;
    if (typeof fromConfig === "string" && fromConfig !== "") return fromConfig;
  } catch {
    // FIREBASE_CONFIG may also be a file path; the project's conventional bucket stands then.
  }
  return `${settings.projectId()}.appspot.com`;
}

/** The bucket a storage entry names, resolved. */
export const bucketOfEntry = (entry: Pick<StorageEntry, "bucket">): string => resolveBucket(entry.bucket, { projectId: settings.projectId(), defaultBucket: defaultBucket() });

/** The delete window's settings (docs/HOLD-FENCE.md, Cloud Storage objects), in ms. */
export const storageSettings = {
  windowMs: (): number => setting("storageDeleteWindowSeconds") * 1000,
  deleteTimeoutMs: (): number => setting("storageDeleteTimeoutSeconds") * 1000,
  /**
   * How long before the window's end the last delete may start: the delete's timeout and 1 s for the clocks of the
   * runner and of a hold's placer (both on Google's synchronised clocks in production). Refused when it leaves the
   * window no time.
   */
  marginMs: (): number => {
    const margin = setting("storageDeleteTimeoutSeconds") * 1000 + 1000;
    const window = setting("storageDeleteWindowSeconds") * 1000;
    if (margin * 2 > window) throw new Error(`RETENTION_STORAGE_DELETE_WINDOW_SECONDS must be at least twice RETENTION_STORAGE_DELETE_TIMEOUT_SECONDS + 1 (the margin), got ${window / 1000} s for ${margin / 1000} s`);
    return margin;
  },
  softDeleteDays: (): number => setting("storageSoftDeleteDays"),
  auditMaxObjects: (): number => setting("auditMaxObjects"),
};

/**
 * Marks `ref.generation` of the object as held by `holdId` (custom metadata `retention-hold-<holdId>`), and sets
 * Cloud Storage's `temporaryHold`, which production enforces against every deleter and overwriter (the emulator
 * drops it). Idempotent: marking again keeps one marker.
 */
export async function placeHoldMarker(ref: ObjectRef, holdId: string): Promise<MarkOutcome> {
  checkHoldId(holdId);
  return writeMarker(ref, "marked", (o) => {
    const metadata: Record<string, string | null> = { [HOLD_MARKER_PREFIX + holdId]: "1" };
    // Take the temporary hold only when nobody holds it; then the engine owns it until its last marker goes.
    if (o.temporaryHold === true) return { metadata };
    return { metadata: { ...metadata, [TEMPORARY_HOLD_OWNER_KEY]: "1" }, temporaryHold: true };
  });
}

/**
 * Clears `holdId`'s marker from `ref.generation` of the object. When no marker is left and the engine took
 * `temporaryHold`, it is released too. Clearing a marker that is not there is not an error.
 */
export async function clearHoldMarker(ref: ObjectRef, holdId: string): Promise<MarkOutcome> {
  checkHoldId(holdId);
  return writeMarker(ref, "cleared", (o) => {
    const metadata: Record<string, string | null> = { [HOLD_MARKER_PREFIX + holdId]: null };
    const othersLeft = o.holdIds.some((id) => id !== holdId);
    if (othersLeft || o.metadata[TEMPORARY_HOLD_OWNER_KEY] === undefined) return { metadata };
    return { metadata: { ...metadata, [TEMPORARY_HOLD_OWNER_KEY]: null }, temporaryHold: false };
  });
}

function checkHoldId(holdId: string): void {
  if (!HOLD_ID.test(holdId)) throw new Error(`a hold id for a Cloud Storage marker is 1..128 of [A-Za-z0-9_-], not ${JSON.stringify(holdId)}`);
}

/**
 * Reads the object, checks it is still `ref.generation`, and writes the patch `change` computes from what it read,
 * conditional on that read's generation and metageneration. Another metadata write in between (production: 412)
 * means reading and computing again.
 */
async function writeMarker(
  ref: ObjectRef,
  done: "marked" | "cleared",
  change: (o: StorageObject) => { metadata: Record<string, string | null>; temporaryHold?: boolean },
): Promise<MarkOutcome> {
  for (let attempt = 1; ; attempt++) {
    const current = await readObject(ref.bucket, ref.name);
    if (!current) return { outcome: "gone" };
    if (current.generation !== ref.generation) return { outcome: "changed", current };
    try {
      const [m] = await fileOf(ref).setMetadata(change(current), {
        ifGenerationMatch: current.generation,
        ifMetagenerationMatch: current.metageneration,
      });
      return { outcome: done, object: toObject(ref.bucket, m) };
    } catch (err) {
      if (statusOf(err) === 404) return { outcome: "gone" };
      if (statusOf(err) !== 412 || attempt >= MARK_ATTEMPTS) throw err;
    }
  }
}
