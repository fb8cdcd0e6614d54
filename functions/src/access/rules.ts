import { DomainError, notFound, permissionDenied, preconditionFailed } from "../kernel/errors";

/**
 * Access requests, pure (GDPR Art. 15 and 20, CCPA's right to know; docs/decisions/0040-legal-clocks-and-access.md):
 * an access export's states, the subject's cooldown, who may fetch it and until when, and how its files are cut into
 * parts that a callable pages to its owner. The export itself is the subject export's format (export/rules.ts):
 * JSON Lines per collection, `objects/`, and `manifest.json` with every file's SHA-256 and the set's.
 */

/** PENDING: asked, not built yet; RUNNING: a task builds it (leased); READY: downloadable until `expireAt`; FAILED: given up. */
export const EXPORT_STATES = ["PENDING", "RUNNING", "READY", "FAILED"] as const;
export type ExportState = (typeof EXPORT_STATES)[number];

/** Who asked: the subject themself in the app, or staff for a request received another way (an email, a letter). */
export type ExportSource = "subject" | "staff";

/** An access export's record (`dataExports/{exportId}`) in domain form. */
export interface AccessExport {
  exportId: string;
  uid: string;
  /** The scopes the user is exported in, as their erasure's request group would be (lead first; [""] without scopes). */
  scopes: string[];
  state: ExportState;
  source: ExportSource;
  requestedBy: string;
  requestedAtMs: number;
  readyAtMs: number | null;
  /** When it stops being downloadable, and when TTL deletes it and its parts. */
  expireAtMs: number | null;
  parts: number;
  downloads: number;
}

/** Bytes of one part: well under Firestore's 1 MiB document limit, and 8 of them (base64) under a callable's 10 MB answer. */
export const PART_BYTES = 512 * 1024;
/** Parts one getDataExport page carries. */
export const PAGE_PARTS = 8;
/** How long one build task may hold an export before another may take it over. */
export const BUILD_LEASE_MS = 10 * 60_000;

/** The file of a part, and how its bytes travel: text for the manifest and JSON Lines, base64 for objects. */
export interface PartSpec {
  file: string;
  /** The part's place within its file (0, 1, ...). */
  chunk: number;
  encoding: "utf8" | "base64";
  start: number;
  end: number;
}

/** How a file is carried: `objects/` hold bytes as they are, everything else is UTF-8 text. */
export const encodingOf = (file: string): "utf8" | "base64" => (file.startsWith("objects/") ? "base64" : "utf8");

/**
 * Cuts an export's files into parts of at most PART_BYTES, the manifest first (so the first page tells the owner what
 * follows), then the files in name order. A text file is cut on line ends where it can, so no part holds half a
 * document unless one document is larger than a part; an empty file is one empty part.
 */
export function partsOf(files: readonly { file: string; bytes: Uint8Array }[], partBytes: number = PART_BYTES): PartSpec[] {
  const sorted = [...files].sort((a, b) => (a.file === "manifest.json" ? -1 : b.file === "manifest.json" ? 1 : a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
  const out: PartSpec[] = [];
  for (const f of sorted) {
    const encoding = encodingOf(f.file);
    let start = 0;
    let chunk = 0;
    do {
      let end = Math.min(start + partBytes, f.bytes.length);
      if (encoding === "utf8" && end < f.bytes.length) {
        const nl = f.bytes.lastIndexOf(0x0a, end - 1);
        if (nl >= start) end = nl + 1;
        else while (end > start && (f.bytes[end]! & 0xc0) === 0x80) end--; // never split a UTF-8 character
      }
      out.push({ file: f.file, chunk, encoding, start, end });
      start = end;
      chunk++;
    } while (start < f.bytes.length);
  }
  return out;
}

/** A part's document id: its place in the export, zero-padded so the ids sort in order. */
export const partId = (index: number): string => String(index).padStart(6, "0");

/**
 * How long after its ask an export still being built (PENDING, RUNNING) counts as live. Well past the build queue's
 * whole retry schedule (8 attempts, backoff up to 10 minutes, 9 minutes each: under 2 hours), so only an export whose
 * build was lost (its task never ran, or died without marking it FAILED) passes it; it then blocks no one, and TTL
 * removes it at the expiry it was created with.
 */
export const BUILD_GIVE_UP_MS = 6 * 3_600_000;

/** An export the subject can have now: being built (within BUILD_GIVE_UP_MS of its ask), or READY and not expired. */
export function isLiveExport(e: AccessExport, nowMs: number): boolean {
  if (e.state === "PENDING" || e.state === "RUNNING") return e.requestedAtMs + BUILD_GIVE_UP_MS > nowMs;
  return e.state === "READY" && (e.expireAtMs ?? 0) > nowMs;
}

/**
 * Whether the subject may ask for a new export now. An export still being built, or ready and not expired, is
 * returned instead of a second one ("existing"). A new one is refused while an erasure of the subject is open
 * (ERASURE_OPEN, failed-precondition: the erasure deletes the subject's exports, and a new one would copy the data it
 * is erasing; docs/decisions/0040-legal-clocks-and-access.md). Otherwise a subject's own ask waits out the cooldown
 * after their last one that did not fail (EXPORT_COOLDOWN, resource-exhausted: a FAILED build is no copy, so it costs
 * the subject no wait); staff, acting on a request received another way, do not wait.
 */
export function exportDecision(
  mine: readonly AccessExport[],
  source: ExportSource,
  cooldownMs: number,
  nowMs: number,
  erasureOpen: boolean = false,
): { kind: "existing"; export: AccessExport } | { kind: "create" } {
  const live = mine.filter((e) => isLiveExport(e, nowMs)).sort((a, b) => b.requestedAtMs - a.requestedAtMs)[0];
  if (live) return { kind: "existing", export: live };
  if (erasureOpen) throw preconditionFailed("ERASURE_OPEN", "An erasure of this person's data is under way: no new copy is made of the data it erases.");
  if (source === "subject" && cooldownMs > 0) {
    const last = mine.filter((e) => e.source === "subject" && e.state !== "FAILED").reduce((m, e) => Math.max(m, e.requestedAtMs), Number.NEGATIVE_INFINITY);
    if (last + cooldownMs > nowMs) {
      throw new DomainError("resource-exhausted", "EXPORT_COOLDOWN", "A copy of your data was made recently; ask again later.", { retryAfter: new Date(last + cooldownMs).toISOString() });
    }
  }
  return { kind: "create" };
}

/**
 * Whether a build that threw ends the export FAILED now, or throws again for the queue to retry: FAILED on the queue's
 * last attempt, and at once for an error no retry can fix (a domain error: the registry or the subject refuses the
 * export, the same way every time).
 */
export const buildGivesUp = (err: unknown, finalAttempt: boolean): boolean => finalAttempt || err instanceof DomainError;

/** What a FAILED export's evidence says of the error: its stable code or its class, never its message (it may name data). */
export function failureCode(err: unknown): string {
  if (err instanceof DomainError) return err.reason;
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === "string" || typeof code === "number") return String(code);
  return err instanceof Error ? err.name : "UNKNOWN";
}

/**
 * Whether `uid` may fetch the export now: only its subject (NOT_OWNER; staff included: they send the subject to the
 * app, they do not receive the data), once READY (EXPORT_NOT_READY, with its state), and before it expires
 * (EXPORT_EXPIRED: TTL deletes within a day or so of expiry, so the date is checked, not the document's presence).
 */
export function assertMayFetch(e: AccessExport | null, uid: string, nowMs: number): AccessExport {
  if (e === null) throw notFound("EXPORT_NOT_FOUND", "No such export.");
  if (e.uid !== uid) throw permissionDenied("NOT_OWNER", "Only the person an export is about may download it.");
  if (e.state !== "READY") throw preconditionFailed("EXPORT_NOT_READY", "The export is not ready yet.", { state: e.state });
  if (e.expireAtMs === null || e.expireAtMs <= nowMs) throw preconditionFailed("EXPORT_EXPIRED", "The export has expired; ask for a new one.");
  return e;
}
