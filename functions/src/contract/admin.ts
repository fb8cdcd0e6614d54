import { z } from "zod";
import { JOB_NAMES } from "../kernel/job";
import { LIFECYCLE_STATES } from "../kernel/lifecycle";
import { inputs, isoString, StaffNames } from "./inputs";
import { SubjectInput, SubjectView } from "./subjects";

/** The jobs an operator can run on demand (runRetentionJob, `retention run`) as well as on a schedule. */
export { JOB_NAMES };

export const PlanDeletionInput = z.union([
  z.object({ subjectUid: inputs.id }).strict(),
  z.object({ tenantId: inputs.id }).strict(),
  /** The general form: a user (in one scope, or every scope the registry finds them in) or a scope. */
  z.object({ subject: SubjectInput }).strict(),
]);
export const PlanRetainItem = z.object({
  path: z.string(),
  action: z.enum(["retain", "mask", "removeFromArray"]),
  reasonCode: z.string(),
  reason: z.string(),
  fields: z.array(z.string()).optional(),
  until: z.string().optional(),
  holdId: z.string().optional(),
  deferredByHold: z.enum(["delete", "mask", "removeFromArray"]).optional(),
});
/** A Cloud Storage object of a plan, with the generation it was decided on. */
export const PlanObject = z.object({ path: z.string(), generation: z.string() });

/**
 * One governed database's part of a plan. A bucket's objects are planned in one database's part only: the one
 * whose holds can cover them (their heldWith document's), so `objects` is empty in the others.
 */
export const PlanPart = z.object({
  delete: z.array(z.string()),
  retain: z.array(PlanRetainItem),
  externalCopiesToReview: z.array(z.string()),
  manifestHash: z.string(),
  objects: z.array(PlanObject),
});

/**
 * The plan of the primary database at the top; under a registry with several governed databases, each other
 * database's part under `databases` (by logical name), each with its own manifest hash.
 */
export const PlanDeletionOutput = z.object({
  /** Document paths, then Cloud Storage objects as `gs://bucket/name`. */
  delete: z.array(z.string()),
  retain: z.array(PlanRetainItem),
  externalCopiesToReview: z.array(z.string()),
  policyVersion: z.string(),
  /** The manifest's hash; for a user in several scopes, the hash of every scope's manifest hash in order. */
  manifestHash: z.string(),
  /** Every Cloud Storage object the manifest deletes or keeps, with the generation it was decided on (empty without storage entries). */
  objects: z.array(PlanObject),
  /** Whose plan it is, in the general form (a user in several scopes, planned in all: the user with scope null). */
  subjectRef: SubjectView,
  /**
   * A user in several scopes, planned in all of them (the request group their erasure opens): each scope's own
   * manifest, the lead's first (it alone erases the data that names the uid alone); the lists above are their union.
   */
  scopes: z.array(z.object({ scope: z.string(), lead: z.boolean(), manifestHash: z.string(), delete: z.number(), retain: z.number() })).optional(),
  databases: z.record(z.string(), PlanPart).optional(),
});

export const TransitionLifecycleInput = z
  .object({ path: inputs.documentPath, to: z.enum(LIFECYCLE_STATES), reason: inputs.text.min(1), correlationId: inputs.id.optional() })
  .strict();
export const TransitionLifecycleOutput = z.object({ path: z.string(), from: z.enum(LIFECYCLE_STATES), to: z.enum(LIFECYCLE_STATES) });

export const RunRetentionJobInput = z.object({ job: z.enum(JOB_NAMES), dryRun: z.boolean().optional(), asOf: inputs.isoTime.optional() }).strict();
/** A job's summary: counts and codes; each job adds its own members. */
export const RunRetentionJobOutput = z.object({ job: z.enum(JOB_NAMES), dryRun: z.boolean(), asOf: isoString.nullable() }).catchall(z.unknown());

export const BRAKE_DECISIONS = ["APPROVE", "DENY"] as const;
export const BRAKE_RUN_STATES = ["WAITING", "APPROVED", "DENIED", "USED"] as const;
/** The key the tripped brake recorded (`retentionJobs/brake-{runKey}`, PURGE_BRAKE_TRIPPED evidence). */
export const runKey = z.string().regex(/^[0-9a-f]{32}$/, "a run key: 32 lowercase hex characters");

export const ApprovePurgeRunInput = z.object({ runKey, decision: z.enum(BRAKE_DECISIONS), note: inputs.text.min(1) }).strict();
export const ApprovePurgeRunOutput = z.object({ runKey: z.string(), state: z.enum(BRAKE_RUN_STATES), expiresAt: isoString.nullable(), evidenceShard: z.string(), evidenceSeq: z.number() });

/** The deletion sets the mass-deletion brake holds back (default: those waiting for a decision), newest trip first. */
export const ListBrakeRunsInput = z
  .object({ state: z.enum(BRAKE_RUN_STATES).optional(), pageSize: inputs.pageSize.optional(), cursor: inputs.cursor.optional() })
  .strict();
export const BrakeRunItem = z.object({
  runKey: z.string(),
  state: z.enum(BRAKE_RUN_STATES),
  kind: z.enum(["request", "sweep"]),
  requestId: z.string().nullable(),
  collection: z.string().nullable(),
  /** The exact deletion set: each unit and the hash of its manifest (what an approval binds to). */
  units: z.array(z.object({ unitKey: z.string(), manifestHash: z.string() })),
  countsByClass: z.record(z.string(), z.number()),
  wouldDelete: z.number(),
  violations: z.array(z.object({ kind: z.string(), retentionClass: z.string().optional() }).catchall(z.unknown())),
  policyVersion: z.string(),
  firstTrippedAt: isoString.nullable(),
  lastTrippedAt: isoString.nullable(),
  trips: z.number(),
  lastApprovalProblem: z.string().nullable(),
  decision: z
    .object({ decision: z.enum(BRAKE_DECISIONS), by: z.string(), at: isoString.nullable(), expiresAt: isoString.nullable(), note: z.string(), evidenceShard: z.string().nullable(), evidenceSeq: z.number() })
    .nullable(),
});
export const ListBrakeRunsOutput = z.object({ items: z.array(BrakeRunItem), nextCursor: z.string().nullable(), people: StaffNames });
