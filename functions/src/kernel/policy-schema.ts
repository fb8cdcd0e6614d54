import { z } from "zod";

/**
 * The zod schema of a policy registry version (`policies/versions/*.json`). The registry is data: an
 * organisation's decisions written down so that code can enforce them and people can review them.
 */

const kebab = z.string().regex(/^[a-z0-9]+(-[a-z0-9]+)*$/, "kebab-case id");
const SCREAMING = z.string().regex(/^[A-Z][A-Z0-9_]*$/, "SCREAMING_SNAKE code");
/** A collection path pattern such as `tenants/{tenantId}/orders/{orderId}`: collection/{docVar} pairs. */
const docPattern = z
  .string()
  .regex(/^[A-Za-z][A-Za-z0-9_-]*\/\{[A-Za-z]+\}(\/[A-Za-z][A-Za-z0-9_-]*\/\{[A-Za-z]+\})*$/, "collection/{id} pairs");

export const RetentionClassSchema = z
  .object({
    id: kebab,
    description: z.string().min(1),
    /** Days from the anchor (the document's `createdAt`, or the parent's expiry for inherited classes). null: no fixed end. */
    durationDays: z.number().int().positive().nullable(),
    expiryIsBusinessFact: z.boolean(),
    mechanism: z.enum(["ttl", "workflow", "archive-workflow"]),
    holdBehaviour: z.enum(["allow", "deny"]),
    archive: z.object({ required: z.boolean(), target: z.enum(["firestore"]).optional() }).strict(),
    recovery: z.string().min(1),
    /** Days a deletion request waits before the purge may act (the user can still cancel). */
    graceDays: z.number().int().nonnegative().optional(),
    /** Days by which a deletion request must be completed (GDPR Art. 12(3): one month). */
    dueDays: z.number().int().positive().optional(),
    /** The nested-data rule: children carry their parent's `expireAt`. */
    inheritsParentExpiry: z.boolean().default(false),
    /** Erasable through a subject's deletion workflow (a user's or a tenant's request) before its retention ends. */
    userDeletable: z.boolean(),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (c.mechanism === "ttl" && c.durationDays === null && !c.inheritsParentExpiry) {
      ctx.addIssue({ code: "custom", message: `${c.id}: a ttl class needs durationDays or inheritsParentExpiry` });
    }
    if (c.mechanism === "archive-workflow" && !c.archive.required) {
      ctx.addIssue({ code: "custom", message: `${c.id}: archive-workflow requires archive.required=true` });
    }
  });

export const CollectionRuleSchema = z
  .object({
    /** Document path pattern, e.g. `sessions/{sessionId}/tokens/{tokenId}`. */
    pattern: docPattern,
    retentionClass: kebab,
    /** Field the class's retention is anchored to (defaults to createdAt). */
    anchorField: z.string().default("createdAt"),
    /** For inherited classes: the parent document pattern whose expireAt the child copies. */
    parentPattern: docPattern.optional(),
    description: z.string().optional(),
  })
  .strict();

const whereClause = z.tuple([z.string().min(1), z.literal("=="), z.string().min(1)]);

export const DataMapEntrySchema = z
  .object({
    id: kebab,
    /**
     * doc: one document by path. query: a collection filtered by foreign key.
     * collectionGroup: every collection with this id, filtered by foreign key.
     */
    kind: z.enum(["doc", "query", "collectionGroup"]),
    path: z.string().optional(),
    collection: z.string().optional(),
    collectionId: z.string().optional(),
    where: z.array(whereClause).default([]),
    action: z.enum(["delete", "retain", "mask"]),
    /** Descendant subcollections go with the document. */
    recursive: z.boolean().default(false),
    /** A copy outside the subject's own tree (directories, feeds): listed for review. */
    external: z.boolean().default(false),
    maskFields: z.array(z.string().min(1)).optional(),
    /** Why data is retained or masked instead of deleted; shown to the user. */
    reason: z.string().optional(),
    reasonCode: SCREAMING.optional(),
  })
  .strict()
  .superRefine((e, ctx) => {
    const need = { doc: "path", query: "collection", collectionGroup: "collectionId" } as const;
    if (!e[need[e.kind]]) ctx.addIssue({ code: "custom", message: `${e.id}: kind ${e.kind} needs ${need[e.kind]}` });
    if (e.action === "mask" && (!e.maskFields || e.maskFields.length === 0)) {
      ctx.addIssue({ code: "custom", message: `${e.id}: mask needs maskFields` });
    }
    if (e.action !== "delete" && (!e.reason || !e.reasonCode)) {
      ctx.addIssue({ code: "custom", message: `${e.id}: ${e.action} needs reason and reasonCode` });
    }
  });

export const HoldReasonSchema = z
  .object({
    code: SCREAMING,
    description: z.string().min(1),
    /** The person releasing must differ from the person who placed the hold. */
    twoPersonRelease: z.boolean(),
    /** May be released before its releaseAfter date. */
    earlyReleaseAllowed: z.boolean(),
  })
  .strict();

export const ControlPlaneCollectionSchema = z
  .object({ collection: z.string().min(1), retentionClass: kebab, description: z.string().min(1) })
  .strict();

export const RegistrySchema = z
  .object({
    version: z.string().regex(/^v[0-9]+$/),
    effectiveFrom: z.iso.datetime(),
    description: z.string().min(1),
    classes: z.array(RetentionClassSchema).min(1),
    collections: z.array(CollectionRuleSchema).min(1),
    controlPlane: z.array(ControlPlaneCollectionSchema),
    holdReasons: z.array(HoldReasonSchema).min(1),
    dataMap: z.object({ user: z.array(DataMapEntrySchema).min(1), tenant: z.array(DataMapEntrySchema).min(1) }).strict(),
    purge: z
      .object({
        /** Mass-deletion brake: refuse a run deleting more than this many documents... */
        brakeMaxDocuments: z.number().int().positive(),
        /** ...or more than this share of any one class's documents. */
        brakeMaxShareOfClass: z.number().positive().max(1),
        /** Share checks only apply when a class has at least this many documents. */
        brakeMinClassSize: z.number().int().positive(),
      })
      .strict(),
    /** How long idempotency markers live: must exceed the longest redelivery window. */
    processedEventTtlDays: z.number().int().positive(),
  })
  .strict()
  .superRefine((r, ctx) => {
    const ids = new Set<string>();
    for (const c of r.classes) {
      if (ids.has(c.id)) ctx.addIssue({ code: "custom", message: `duplicate class ${c.id}` });
      ids.add(c.id);
    }
    for (const col of [...r.collections, ...r.controlPlane]) {
      if (!ids.has(col.retentionClass)) {
        const name = "pattern" in col ? col.pattern : col.collection;
        ctx.addIssue({ code: "custom", message: `${name} names unknown class ${col.retentionClass}` });
      }
    }
    for (const col of r.collections) {
      const cls = r.classes.find((c) => c.id === col.retentionClass);
      if (cls?.inheritsParentExpiry && !col.parentPattern) {
        ctx.addIssue({ code: "custom", message: `${col.pattern}: inherited class needs parentPattern` });
      }
    }
    const codes = new Set<string>();
    for (const h of r.holdReasons) {
      if (codes.has(h.code)) ctx.addIssue({ code: "custom", message: `duplicate hold reason ${h.code}` });
      codes.add(h.code);
    }
  });

export type Registry = z.infer<typeof RegistrySchema>;
export type RetentionClass = z.infer<typeof RetentionClassSchema>;
export type CollectionRule = z.infer<typeof CollectionRuleSchema>;
export type DataMapEntry = z.infer<typeof DataMapEntrySchema>;
export type HoldReason = z.infer<typeof HoldReasonSchema>;
