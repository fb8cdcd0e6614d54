import { z } from "zod";

/**
 * Bounded input shapes shared by the callable schemas. Pure zod (no Firebase imports): the functions, the
 * typed client and the console all validate with these same schemas.
 */
/** A document path: collection/id pairs, no empty, `.` / `..` or reserved `__x__` segments. */
const documentPath = z
  .string()
  .min(3)
  .max(1024)
  .refine((p) => {
    const s = p.split("/");
    return s.length % 2 === 0 && s.every((seg) => seg.length > 0 && seg.length <= 200 && seg !== "." && seg !== ".." && !/^__.*__$/.test(seg));
  }, "a document path: collection/id pairs");

/** A Cloud Storage object as evidence names it: `gs://<bucket>/<name>`, the name 1 to 1024 characters, no control characters. */
const OBJECT_PATH = /^gs:\/\/[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]\/(.{1,1024})$/u;
const hasControl = (s: string): boolean => [...s].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f);

export const inputs = {
  /** A Firestore document id as this service issues them (auto-ids, uids, fixed demo ids). */
  id: z.string().min(1).max(128).regex(/^[A-Za-z0-9_-]+$/, "letters, digits, - and _ only"),
  documentPath,
  /** A path evidence names: a document path, or a Cloud Storage object (`gs://bucket/name`, docs/STORAGE.md). */
  evidencePath: z
    .string()
    .min(3)
    .max(1100)
    .refine((p) => (p.startsWith("gs://") ? OBJECT_PATH.test(p) && !hasControl(p) : documentPath.safeParse(p).success), "a document path (collection/id pairs) or a Cloud Storage object (gs://bucket/name)"),
  /** Staff or user free text: stored on the record, hashed in evidence. */
  text: z.string().max(500),
  isoTime: z.iso.datetime({ offset: true }),
  code: z.string().min(1).max(64).regex(/^[A-Z][A-Z0-9_]*$/, "SCREAMING_SNAKE code"),
  /**
   * A governed database by its logical name in the registry (`primary`, or one of its `databases`): kebab-case. A
   * name the registry does not declare is refused by the service (UNKNOWN_DATABASE).
   */
  database: z.string().min(1).max(63).regex(/^[a-z0-9]+(-[a-z0-9]+)*$/, "a database's logical name (kebab-case)"),
  /** A list's opaque paging cursor, as the previous page returned it. */
  cursor: z.string().min(1).max(1500),
  /** A list's page size: bounded, so one call reads a bounded number of documents. */
  pageSize: z.number().int().min(1).max(100),
};

/** A time as the wire carries it: an ISO 8601 string (UTC). */
export const isoString = z.string();

/**
 * The staff members a list names (placers, releasers, approvers, requesters), by uid: their Auth display name and
 * email, so the console shows people, not uids. Staff accounts only; a customer is never named; a uid missing here
 * (no Auth account any more, or the system) is shown as it is.
 */
export const StaffNames = z.record(z.string(), z.object({ name: z.string().nullable(), email: z.string().nullable() }));
