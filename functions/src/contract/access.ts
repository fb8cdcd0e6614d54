import { z } from "zod";
import { inputs, isoString } from "./inputs";

/**
 * Access requests (GDPR Art. 15 and 20, CCPA's right to know): a subject's copy of their data, built by a task in the
 * subject export's format and paged to them by getDataExport until it expires (docs/decisions/0040-legal-clocks-and-access.md).
 */

export const ExportStateOut = z.enum(["PENDING", "RUNNING", "READY", "FAILED"]);

/** Only for the caller themself: no uid, nothing to name. */
export const RequestDataExportInput = z.object({}).strict();
export const AccessExportView = z.object({
  exportId: z.string(),
  state: ExportStateOut,
  requestedAt: isoString,
  /** Until when it can be downloaded; null until it is ready. */
  expiresAt: isoString.nullable(),
  /** False when an export being built or still downloadable was returned instead of a new one. */
  created: z.boolean(),
});
export const RequestDataExportOutput = AccessExportView;

/** `from`: the first part of the page (0, then each page's `next`). Page 0 is a download, recorded as evidence. */
export const GetDataExportInput = z.object({ exportId: inputs.id, from: z.number().int().min(0).max(1_000_000).optional() }).strict();
export const GetDataExportOutput = z.object({
  exportId: z.string(),
  expiresAt: isoString,
  /** The manifest's set hash and counts (manifest.json itself is the first part). */
  manifest: z.object({ sha256: z.string(), documents: z.number(), files: z.number(), objects: z.number() }),
  totalParts: z.number(),
  /** Each part: a piece of one file of the export, as UTF-8 text (manifest.json, *.jsonl) or base64 (objects/). */
  parts: z.array(z.object({ index: z.number(), file: z.string(), chunk: z.number(), encoding: z.enum(["utf8", "base64"]), data: z.string() })),
  next: z.number().nullable(),
});

/**
 * Staff run the same export for a request received another way (an email, a letter): the user it is about, and
 * where the request came from (a ticket or message reference, stored, hashed in evidence). The subject downloads it
 * in the app like their own; no cooldown applies.
 */
export const ExportSubjectDataInput = z.object({ uid: inputs.id, reference: inputs.text.min(1) }).strict();
export const ExportSubjectDataOutput = AccessExportView;
