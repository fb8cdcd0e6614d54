import type { DocumentData } from "firebase-admin/firestore";
import type { DataKeys } from "./keys";
import { isSealed, open, sealAad } from "./rules";

/** What opening an archive copy gave: its business data in plain form, or why it stays sealed. */
export type OpenedCopy =
  | { ok: true; plain: unknown }
  | { ok: false; reason: "NOT_SEALED" | "SHREDDED" | "KEY_MISSING" | "KEK_UNAVAILABLE" | "SEAL_INVALID"; shreddedAtMs: number | null; destroyAtMs: number | null };

/**
 * Opens a sealed archive copy with its data key: the plain form of its business data (Timestamps as
 * `{ $timestamp }`, references as `{ $ref }`, as hashed: purge/runner/archive.ts#toPlain).
 */
export async function openCopy(archive: DocumentData, archiveId: string, keys: DataKeys): Promise<OpenedCopy> {
  const none = { shreddedAtMs: null, destroyAtMs: null };
  if (!isSealed(archive.sealed) || typeof archive.dataKey !== "string" || typeof archive.sourcePath !== "string") return { ok: false, reason: "NOT_SEALED", ...none };
  const found = await keys.open(archive.dataKey);
  if (!found.ok) return { ok: false, reason: found.reason, shreddedAtMs: found.shreddedAtMs, destroyAtMs: found.destroyAtMs };
  try {
    return { ok: true, plain: JSON.parse(open(found.key, archive.sealed, sealAad(archiveId, archive.sourcePath, archive.dataKey))) as unknown };
  } catch {
    return { ok: false, reason: "SEAL_INVALID", ...none };
  }
}
