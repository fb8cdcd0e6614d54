import { z } from "zod";
import { inputs, isoString, StaffNames } from "./inputs";

export const PlaceRetentionHoldInput = z
  .object({ targetPath: inputs.documentPath, reasonCode: inputs.code, releaseAfter: inputs.isoTime.optional(), note: inputs.text.optional() })
  .strict();
export const PlaceRetentionHoldOutput = z.object({ holdId: z.string() });

export const ReleaseRetentionHoldInput = z.object({ holdId: inputs.id, reason: inputs.text.min(1) }).strict();
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
});
export const ListRetentionHoldsOutput = z.object({ items: z.array(HoldListItem), nextCursor: z.string().nullable(), people: StaffNames });
