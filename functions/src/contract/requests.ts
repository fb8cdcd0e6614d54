import { z } from "zod";
import { GONE_BY_UNKNOWN, REQUEST_STATES } from "../kernel/request-states";
import { inputs, isoString, StaffNames } from "./inputs";
import { ScopeInput, SubjectInput, SubjectView } from "./subjects";
import { ProcessorView } from "./processors";

export { REQUEST_STATES };

export const RequestState = z.enum(REQUEST_STATES);

/** Whose data a request erases: a user (an account erasure) or a tenant (its closure). */
export const RequestSubject = z.discriminatedUnion("type", [
  z.object({ type: z.literal("user"), uid: z.string(), tenantId: z.string() }),
  z.object({ type: z.literal("tenant"), tenantId: z.string() }),
]);

/**
 * A request group: a user the registry finds in several scopes is erased in each by one request per scope, opened
 * together. The group's id is its lead's request id (the one a caller is given); each member names its scope and
 * its own state (the group's state is derived from theirs). `lead`: the member that also erases the data that names
 * the uid alone.
 */
export const RequestGroup = z.object({
  groupId: z.string(),
  requests: z.array(z.object({ requestId: z.string(), scope: z.string(), state: RequestState, lead: z.boolean() })),
});

export const RequestAccountDeletionInput = z.object({ reason: inputs.text.optional() }).strict();
/** `requestId`: the request, or for a user in several scopes the group's id (its lead's request), which status and cancel take. */
export const RequestAccountDeletionOutput = z.object({ requestId: z.string(), state: RequestState, graceEndsAt: isoString, group: RequestGroup.optional() });

/**
 * A request's grace end and due date: null only for a tenant's closure awaiting its second approval (its grace
 * starts when it is approved).
 */
const requestDate = isoString.nullable();

export const CancelAccountDeletionInput = z.object({ requestId: inputs.id }).strict();
export const CancelAccountDeletionOutput = z.object({ requestId: z.string(), state: z.literal("CANCELLED") });

/** No `requestId`: the caller's latest request. */
export const GetDeletionStatusInput = z.object({ requestId: inputs.id.optional() }).strict();
/** `database`: under a registry with several governed databases, the one the item lives in (logical name). */
export const RetainedStatusItem = z.object({ path: z.string(), reasonCode: z.string(), reason: z.string(), until: z.string().optional(), text: z.string(), database: z.string().optional() });

/**
 * One governed database's part of a request across several (its cell request): its own state, "fully gone by" and
 * whether ERASURE_COMPLETE is recorded there. `state` null: not opened there yet.
 */
export const RequestCell = z.object({
  database: z.string(),
  state: RequestState.nullable(),
  fullyGoneBy: isoString.nullable(),
  fullyGoneByUnknown: z.enum(GONE_BY_UNKNOWN).nullable(),
  erasureComplete: z.boolean(),
  underHold: z.number(),
  blockedReason: z.string().nullable(),
  /** Waiting for the request of record to be taken by the primary's purge before this database's purge may take it. */
  awaitingRecord: z.boolean(),
});
/**
 * The legal clock a request runs on (docs/decisions/0040-legal-clocks-and-access.md): its law, the deadline the law set
 * when the request was opened, the deadline now (after staff's one extension, if any), the latest an extension may
 * reach, the whole days left (null once answered or withdrawn) and where it stands: open, overdue, on-time, late, none.
 */
export const LegalClockView = z.object({
  law: z.string(),
  name: z.string(),
  startedAt: isoString,
  originalDueAt: isoString,
  dueAt: isoString,
  limit: isoString.nullable(),
  daysLeft: z.number().int().nullable(),
  outcome: z.enum(["open", "overdue", "on-time", "late", "none"]),
  /** `by`: staff only. */
  extension: z.object({ dueAt: isoString, at: isoString, reason: z.string(), by: z.string().optional() }).nullable(),
});

export const GetDeletionStatusOutput = z.object({
  requestId: z.string(),
  state: RequestState,
  graceEndsAt: requestDate,
  dueAt: requestDate,
  /** Events in time order; across several databases, each other database's own, named by `database`; for a request group, every member's, each naming its scope. */
  timeline: z.array(z.object({ at: isoString, event: z.string(), detail: z.string().optional(), database: z.string().optional(), scope: z.string().optional() })),
  retained: z.array(RetainedStatusItem),
  retainedOmitted: z.number().optional(),
  /**
   * When the last copy of what the erasure removed is gone from the governed database and its recovery copies
   * (point-in-time recovery, scheduled backups, archive copies), as configured; null while there is no date.
   */
  fullyGoneBy: isoString.nullable(),
  /** Why `fullyGoneBy` is null (null when there is a date). */
  fullyGoneByUnknown: z.enum(GONE_BY_UNKNOWN).nullable(),
  /** When the final ERASURE_COMPLETE evidence was recorded (the date passed); null until then. */
  erasureCompleteAt: isoString.nullable(),
  /** The legal clock it runs on (a group's: the member due first); null when it runs on none (a closure; a registry without legal clocks). */
  legalClock: LegalClockView.nullable(),
  /**
   * A request across several governed databases: each database's part. `state` and `fullyGoneBy` above are derived
   * from them (PURGED only when every database is; RETAINED_UNDER_HOLD when any is; the latest date).
   */
  cells: z.array(RequestCell).optional(),
  /** A request group's members (the state and dates above are the group's, derived from theirs); absent for a request on its own. */
  group: RequestGroup.optional(),
  /**
   * The processors the erasure notified (services holding a copy: a search index, an email tool), each with its
   * state; absent until the erasure reaches them (the request ends PURGED) or when the registry has none.
   * `fullyGoneBy` waits for their deadlines.
   */
  processors: z.array(ProcessorView).optional(),
  /** Staff only: whose request it is (its subject, and who opened it), and why it is blocked or what a hold retains. */
  staff: z
    .object({
      subject: RequestSubject,
      /** The subject in the general form. */
      subjectRef: SubjectView,
      requestedBy: z.string(),
      source: z.string(),
      blockedReason: z.string().nullable(),
      retainedUnderHold: z.object({ count: z.number(), holds: z.array(z.object({ holdId: z.string().nullable(), reasonCode: z.string() })) }).nullable(),
      /** The staff among the request's actors (who opened it, approved it), named. */
      people: StaffNames,
    })
    .optional(),
});

export const ListDeletionRequestsInput = z
  .object({
    state: RequestState.optional(),
    /** Only requests whose erasure is owed (PENDING, PROCESSING, BLOCKED) and past their due date. */
    overdueOnly: z.boolean().optional(),
    /**
     * Only one subject's requests, newest first: a user's (every scope, or `scope`), or a scope's (its closures and
     * its users' requests in it). Not combined with `state` or `overdueOnly`.
     */
    subject: SubjectInput.optional(),
    pageSize: inputs.pageSize.optional(),
    cursor: inputs.cursor.optional(),
  })
  .strict()
  .refine((i) => i.subject === undefined || (i.state === undefined && i.overdueOnly === undefined), { message: "subject is not combined with state or overdueOnly", path: ["subject"] });
export const DeletionRequestListItem = z.object({
  requestId: z.string(),
  state: RequestState,
  subject: RequestSubject,
  /** Who opened it: the user for their own account, the staff member for a tenant's closure, or the system. */
  requestedBy: z.string(),
  source: z.string(),
  requestedAt: isoString,
  graceEndsAt: requestDate,
  dueAt: requestDate,
  /** Erasure owed and the due date passed. */
  overdue: z.boolean(),
  /** The law of its legal clock, and whole days left until its deadline while it is owed (negative once past); null otherwise. */
  law: z.string().nullable(),
  daysLeft: z.number().int().nullable(),
  /** Staff extended its deadline (once, with a reason). */
  extended: z.boolean(),
  softDeleted: z.number(),
  blockedReason: z.string().nullable(),
  retainedUnderHold: z.number().nullable(),
  /** A request across several governed databases: each database's state (the item's `state` is derived from them). */
  cells: z.array(z.object({ database: z.string(), state: RequestState.nullable() })).optional(),
  /** The subject in the general form. */
  subjectRef: SubjectView,
  /** The request group it is a member of (its id, the lead's request id) and whether it is the lead, or null. */
  group: z.object({ groupId: z.string(), lead: z.boolean() }).nullable(),
});
export const ListDeletionRequestsOutput = z.object({ items: z.array(DeletionRequestListItem), nextCursor: z.string().nullable(), people: StaffNames });

/** A retention-admin opens a tenant's closure; a second staff member must approve it before anything happens. */
export const RequestTenantDeletionInput = z.union([
  z.object({ tenantId: inputs.id, reason: inputs.text.min(1) }).strict(),
  /** The same in the general form: the scope, whatever the registry calls it. */
  z.object({ subject: ScopeInput, reason: inputs.text.min(1) }).strict(),
]);
export const RequestTenantDeletionOutput = z.object({
  requestId: z.string(),
  state: RequestState,
  requestedBy: z.string(),
  /** False when an open closure of the tenant was returned as it is. */
  created: z.boolean(),
  graceEndsAt: requestDate,
});

export const ApproveTenantDeletionInput = z.object({ requestId: inputs.id }).strict();
export const ApproveTenantDeletionOutput = z.object({ requestId: z.string(), state: RequestState, approvedBy: z.string().nullable(), graceEndsAt: requestDate, dueAt: requestDate });

export const CancelTenantDeletionInput = z.object({ requestId: inputs.id, reason: inputs.text.min(1) }).strict();
export const CancelTenantDeletionOutput = z.object({ requestId: z.string(), state: z.literal("CANCELLED") });

/**
 * Staff extend a request's legal deadline, once, within its law's limit, with a written reason (recorded as evidence).
 * `until`: the new deadline (absent: the law's limit). A request group's member extends the whole group.
 */
export const ExtendRequestDeadlineInput = z.object({ requestId: inputs.id, reason: inputs.text, until: inputs.isoTime.optional() }).strict();
export const ExtendRequestDeadlineOutput = z.object({
  requestId: z.string(),
  extended: z.array(z.object({ requestId: z.string(), law: z.string(), originalDueAt: isoString, dueAt: isoString })),
});
