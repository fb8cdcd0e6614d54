import { z } from "zod";
import { inputs, isoString, StaffNames } from "./inputs";

/**
 * `database`: the governed database the target lives in, by its logical name in the registry (default: the
 * primary). A hold on the scope's record is placed in every database that has scope data.
 */
export const PlaceRetentionHoldInput = z
  .object({ targetPath: inputs.documentPath, database: inputs.database.optional(), reasonCode: inputs.code, releaseAfter: inputs.isoTime.optional(), note: inputs.text.optional() })
  .strict();
export const PlaceRetentionHoldOutput = z.object({ holdId: z.string(), databases: z.array(z.string()).optional() });

/** `database`: where the hold lives (as the list names it); without it, every database that holds it. */
export const ReleaseRetentionHoldInput = z.object({ holdId: inputs.id, reason: inputs.text.min(1), database: inputs.database.optional() }).strict();
export const ReleaseRetentionHoldOutput = z.object({ holdId: z.string(), state: z.literal("RELEASED") });

export const HOLD_STATES = ["ACTIVE", "RELEASED"] as const;

/**
 * Active holds (or the history: RELEASED), newest first, optionally narrowed to one reason code, one
 * placer and one target path (equality filters, each combination backed by its own index).
 */
export const ListRetentionHoldsInput = z
  .object({
    state: z.enum(HOLD_STATES).optional(),
    reasonCode: inputs.code.optional(),
    /** The placer: a staff uid, or a staff member's email (NOT_FOUND/STAFF_NOT_FOUND when no staff account has it). */
    placedBy: z.union([inputs.id, z.email().max(320)]).optional(),
    targetPath: inputs.documentPath.optional(),
    /** Only the holds of one governed database (logical name); default: every one. */
    database: inputs.database.optional(),
    pageSize: inputs.pageSize.optional(),
    cursor: inputs.cursor.optional(),
  })
  .strict();
export const HoldListItem = z.object({
  holdId: z.string(),
  state: z.enum(HOLD_STATES),
  targetPath: z.string(),
  targetType: z.enum(["document", "subtree"]),
  tenantId: z.string(),
  reasonCode: z.string(),
  reasonDescription: z.string().nullable(),
  twoPersonRelease: z.boolean(),
  placedBy: z.string(),
  placedAt: isoString,
  releaseAfter: isoString.nullable(),
  /** Active and its releaseAfter has passed: someone should decide whether it still applies. */
  pastReleaseAfter: z.boolean(),
  note: z.string().nullable(),
  affected: z.number(),
  /** A hold whose documents (descendants, archive copies) are still being flagged (the record protects them meanwhile). */
  applying: z.boolean(),
  /** Why the caller cannot release it now (TWO_PERSON_RULE: awaiting a second officer), or null. */
  releaseRefusal: z.string().nullable(),
  releasedBy: z.string().nullable(),
  releasedAt: isoString.nullable(),
  releaseReason: z.string().nullable(),
  /**
   * Under a registry with several governed databases: the database the hold lives in (logical name; the primary
   * for a scope hold), every database it is placed in, and whether its placement in the others is still to finish.
   */
  database: z.string().optional(),
  databases: z.array(z.string()).optional(),
  placing: z.boolean().optional(),
});
export const ListRetentionHoldsOutput = z.object({ items: z.array(HoldListItem), nextCursor: z.string().nullable(), people: StaffNames });
