/**
 * Fuzzing the public contract over HTTP. For each callable, at least 1,000 generated payloads (FUZZ_RUNS)
 * get only `invalid-argument` or one of that callable's documented refusals, and none of them writes
 * anything: the whole database (evidence included) is compared before and after.
 *
 * Generation: most payloads break the schema (arbitrary JSON, a valid payload with a wrong-typed, oversized
 * or extra member); the rest are valid-shaped payloads that hit documented refusals. A payload the schema
 * rejects is sent with a token that would succeed on a valid one, so the schema is the only barrier; a
 * valid one is sent with a token whose refusal is documented.
 */
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { ApprovePurgeRunInput } from "../../../../functions/src/entrypoints/callable/approve-purge-run";
import { CancelAccountDeletionInput } from "../../../../functions/src/entrypoints/callable/cancel-account-deletion";
import { GetDeletionStatusInput } from "../../../../functions/src/entrypoints/callable/get-deletion-status";
import { PlaceRetentionHoldInput } from "../../../../functions/src/entrypoints/callable/place-retention-hold";
import { PlanDeletionInput } from "../../../../functions/src/entrypoints/callable/plan-deletion";
import { ReleaseRetentionHoldInput } from "../../../../functions/src/entrypoints/callable/release-retention-hold";
import { RequestAccountDeletionInput } from "../../../../functions/src/entrypoints/callable/request-account-deletion";
import { RunRetentionJobInput } from "../../../../functions/src/entrypoints/callable/run-retention-job";
import { TransitionLifecycleInput } from "../../../../functions/src/entrypoints/callable/transition-lifecycle";
import { RequestTenantDeletionInput } from "../../../../functions/src/entrypoints/callable/request-tenant-deletion";
import { ApproveTenantDeletionInput } from "../../../../functions/src/entrypoints/callable/approve-tenant-deletion";
import { CancelTenantDeletionInput } from "../../../../functions/src/entrypoints/callable/cancel-tenant-deletion";
import {
  ExplainDeletionInput,
  ExportSubjectDataInput,
  ExtendRequestDeadlineInput,
  GetDataExportInput,
  GetRetentionRegistryInput,
  GetRetentionReportInput,
  ListBrakeRunsInput,
  ListDeletionRequestsInput,
  ListRetentionHoldsInput,
  RequestDataExportInput,
} from "../../../../functions/src/contract";
import { ConfirmProcessorNoticeInput } from "../../../../functions/src/entrypoints/callable/confirm-processor-notice";
import { DEMO_DOCS } from "../../../../examples/atlasmart/data";
import { LIFECYCLE_STATES } from "../../../../functions/src/kernel/lifecycle";
import { call, db, waitFor } from "../../../helpers/emulator";
import { callExpect, docData, freshDemo, snapshotDatabase, type Tokens } from "./support";

const RUNS = Number(process.env.FUZZ_RUNS ?? 1000);
// Measured on the emulator: each concurrent request gets its own Functions worker process, so 16 in flight
// took 4.5x longer than 2 (100 payloads: 11.6 s at 16, 5.0 s at 4, 3.4 s per 200 at 2, 2.6 s at 1).
const IN_FLIGHT = Number(process.env.FUZZ_IN_FLIGHT ?? 2);
const SEED = Number(process.env.FUZZ_SEED ?? 20261130);

type TokenRole = keyof Tokens;
interface Case {
  payload: unknown;
  /** Set for valid-shaped cases built to hit a refusal; otherwise chosen by schema validity. */
  token?: TokenRole;
}

interface Spec {
  name: string;
  /** The callable's own input schema: decides which token a generated payload is sent with. */
  schema: { safeParse: (value: unknown) => { success: boolean } };
  /** A valid payload to mutate. */
  base: () => Record<string, unknown>;
  /** Other valid payloads to mutate too: the same callable's other input forms (a subject in the general form). */
  alternates?: () => Record<string, unknown>[];
  /** The token for payloads the schema rejects: it would succeed on a valid payload. */
  privileged: TokenRole;
  /** The token for valid payloads produced by mutation: its refusal is documented. */
  unprivileged: TokenRole;
  /** Valid-shaped payloads that hit documented refusals, with their token. */
  refusals: () => fc.Arbitrary<Case>;
  /** The documented outcomes, as "STATUS/REASON" (a trailing * matches a prefix). */
  documented: string[];
}

const ID_CHARS = fc.constantFrom(..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_".split(""));
const fuzzId = fc.string({ unit: ID_CHARS, minLength: 1, maxLength: 40 }).map((s) => `fz-${s}`);
const screaming = fc.string({ unit: fc.constantFrom(..."ABCDEFGHIJKLMNOPQRSTUVWXYZ_".split("")), minLength: 1, maxLength: 30 }).map((s) => `Z${s}`);
const wrongValue = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 }), { maxKeys: 3 }),
  fc.string({ minLength: 501, maxLength: 1200 }),
  fc.constant(""),
  fc.string({ maxLength: 20 }).map((s) => `${s}/../${s}`),
);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Payloads mostly outside the schema: arbitrary JSON, or a valid payload (the base or an alternate form) with one
 * member broken, added or left out, or one member of a nested object (a subject) broken, added or left out.
 */
function mutations(spec: Spec): fc.Arbitrary<Case> {
  const one = (base: Record<string, unknown>): fc.Arbitrary<Case>[] => {
    const keys = Object.keys(base);
    const nested = keys.filter((k) => isObject(base[k]));
    const inner = (k: string) => base[k] as Record<string, unknown>;
    const extraKey = fc.tuple(fc.string({ minLength: 1, maxLength: 12 }).filter((k) => !keys.includes(k) && k !== "__proto__"), fc.anything({ maxDepth: 1 })).map(([k, v]): Case => ({
      payload: { ...base, [k]: v },
    }));
    // An input with no fields (getRetentionRegistry's `{}`) has no field to give a wrong value or to leave out.
    if (keys.length === 0) return [extraKey];
    return [
      fc.tuple(fc.constantFrom(...keys), wrongValue).map(([k, v]): Case => ({ payload: { ...base, [k]: v } })),
      extraKey,
      fc.constantFrom(...keys).map((k): Case => ({ payload: Object.fromEntries(Object.entries(base).filter(([key]) => key !== k)) })),
      ...(nested.length === 0
        ? []
        : [
            fc
              .constantFrom(...nested)
              .chain((k) => fc.tuple(fc.constant(k), fc.constantFrom(...Object.keys(inner(k))), wrongValue))
              .map(([k, nk, v]): Case => ({ payload: { ...base, [k]: { ...inner(k), [nk]: v } } })),
            fc
              .tuple(fc.constantFrom(...nested), fc.string({ minLength: 1, maxLength: 8 }).filter((x) => x !== "__proto__"), fc.anything({ maxDepth: 1 }))
              .filter(([k, nk]) => !(nk in inner(k)))
              .map(([k, nk, v]): Case => ({ payload: { ...base, [k]: { ...inner(k), [nk]: v } } })),
            fc
              .constantFrom(...nested)
              .chain((k) => fc.tuple(fc.constant(k), fc.constantFrom(...Object.keys(inner(k)))))
              .map(([k, nk]): Case => ({ payload: { ...base, [k]: Object.fromEntries(Object.entries(inner(k)).filter(([x]) => x !== nk)) } })),
          ]),
    ];
  };
  return fc.oneof(fc.anything({ maxDepth: 2, maxKeys: 4 }).map((payload): Case => ({ payload })), ...[spec.base(), ...(spec.alternates?.() ?? [])].flatMap(one));
}

const docPaths = DEMO_DOCS.map((d) => d.path);

const hex32 = fc.string({ unit: fc.constantFrom(..."0123456789abcdef".split("")), minLength: 32, maxLength: 32 });

function specs(ctx: { benRequestId: string; closureRequestId: string; financeHoldId: string; waitingRunKey: string; usedRunKey: string; adaExportId: string; tokens: Tokens }): Spec[] {
  const activeGoverned = docPaths.filter((p) => !p.startsWith("tenants/t-acme/users/u-1002") && !p.includes("u-1002") && !p.startsWith("sessions/s-1002") && p !== "activity/a-002");
  return [
    {
      name: "requestAccountDeletion",
      schema: RequestAccountDeletionInput,
      base: () => ({ reason: "fuzz" }),
      privileged: "ada",
      unprivileged: "stranger",
      refusals: () => fc.option(fc.string({ maxLength: 500 }), { nil: undefined }).map((reason) => ({ payload: reason === undefined ? {} : { reason }, token: "clara" as const })),
      documented: ["PERMISSION_DENIED/NO_TENANT_CLAIM"],
    },
    {
      name: "cancelAccountDeletion",
      schema: CancelAccountDeletionInput,
      base: () => ({ requestId: ctx.benRequestId }),
      privileged: "ben",
      unprivileged: "ada",
      refusals: () =>
        fc.oneof(
          fuzzId.map((requestId) => ({ payload: { requestId }, token: "ben" as const })),
          fc.constantFrom<TokenRole>("ada", "clara", "rita").map((token) => ({ payload: { requestId: ctx.benRequestId }, token })),
        ),
      documented: ["NOT_FOUND/REQUEST_NOT_FOUND", "PERMISSION_DENIED/NOT_OWNER"],
    },
    {
      name: "getDeletionStatus",
      schema: GetDeletionStatusInput,
      base: () => ({ requestId: ctx.benRequestId }),
      privileged: "ben",
      unprivileged: "ada",
      refusals: () =>
        fc.oneof(
          fuzzId.map((requestId) => ({ payload: { requestId }, token: "clara" as const })),
          fc.constantFrom<TokenRole>("ada", "rita", "stranger").map((token) => ({ payload: { requestId: ctx.benRequestId }, token })),
        ),
      documented: ["NOT_FOUND/REQUEST_NOT_FOUND", "PERMISSION_DENIED/NOT_OWNER"],
    },
    {
      name: "placeRetentionHold",
      schema: PlaceRetentionHoldInput,
      base: () => ({ targetPath: "tenants/t-acme/orders/o-1001", reasonCode: "LITIGATION", releaseAfter: "2031-01-01T00:00:00Z", note: "fuzz" }),
      privileged: "clara",
      unprivileged: "ada",
      refusals: () =>
        fc.oneof(
          // Valid codes only where the target refuses; unknown codes anywhere.
          fc.tuple(fc.constantFrom("events", "tenants", "activity", "userDirectory", "auditRecords"), fuzzId, fc.constantFrom("LITIGATION", "FINANCE_RETENTION")).map(([c, id, reasonCode]) => ({
            payload: { targetPath: `${c}/${id}`, reasonCode },
            token: "clara" as const,
          })),
          fc.tuple(fc.constantFrom("deletionAudits", "retentionHolds", "unknownThings", "tenants/t-acme/pets"), fuzzId).map(([c, id]) => ({
            payload: { targetPath: `${c}/${id}`, reasonCode: "LITIGATION" },
            token: "clara" as const,
          })),
          fc.constantFrom("sessions/s-1001", "sessions/s-1001/tokens/tk-1001").map((targetPath) => ({ payload: { targetPath, reasonCode: "LITIGATION" }, token: "clara" as const })),
          fc.tuple(fc.constantFrom(...docPaths), screaming).map(([targetPath, reasonCode]) => ({ payload: { targetPath, reasonCode }, token: "clara" as const })),
          fc.constantFrom(...docPaths).map((targetPath) => ({ payload: { targetPath, reasonCode: "LITIGATION" }, token: "rita" as const })),
        ),
      documented: [
        "PERMISSION_DENIED/NOT_COMPLIANCE",
        "INVALID_ARGUMENT/UNKNOWN_REASON_CODE",
        "INVALID_ARGUMENT/NOT_GOVERNED_PATH",
        "NOT_FOUND/TARGET_NOT_FOUND",
        "FAILED_PRECONDITION/HOLD_NOT_ALLOWED_FOR_CLASS",
      ],
    },
    {
      name: "releaseRetentionHold",
      schema: ReleaseRetentionHoldInput,
      base: () => ({ holdId: ctx.financeHoldId, reason: "fuzz" }),
      privileged: "dev",
      unprivileged: "ada",
      refusals: () =>
        fc.oneof(
          fuzzId.map((holdId) => ({ payload: { holdId, reason: "r" }, token: "dev" as const })),
          fc.constantFrom<TokenRole>("clara", "dev", "rita", "ben").map((token) => ({ payload: { holdId: ctx.financeHoldId, reason: "r" }, token })),
        ),
      documented: ["PERMISSION_DENIED/NOT_COMPLIANCE", "NOT_FOUND/HOLD_NOT_FOUND", "PERMISSION_DENIED/TWO_PERSON_RULE", "FAILED_PRECONDITION/RELEASE_BEFORE_RELEASE_AFTER"],
    },
    {
      name: "planDeletion",
      schema: PlanDeletionInput,
      base: () => ({ subjectUid: "u-1001" }),
      alternates: () => [{ subject: { type: "user", uid: "u-1001", scope: "t-acme" } }, { subject: { type: "scope", id: "t-acme" } }],
      privileged: "clara",
      unprivileged: "ada",
      refusals: () =>
        fc.oneof(
          fuzzId.map((subjectUid) => ({ payload: { subjectUid }, token: "clara" as const })),
          fuzzId.map((tenantId) => ({ payload: { tenantId }, token: "dev" as const })),
          fuzzId.map((uid) => ({ payload: { subject: { type: "user", uid } }, token: "clara" as const })),
          fuzzId.map((id) => ({ payload: { subject: { type: "scope", id } }, token: "dev" as const })),
          fc.constantFrom<TokenRole>("ada", "rita", "stranger").map((token) => ({ payload: { tenantId: "t-acme" }, token })),
          fc.constantFrom<TokenRole>("ada", "rita", "stranger").map((token) => ({ payload: { subject: { type: "user", uid: "u-1001" } }, token })),
        ),
      documented: ["PERMISSION_DENIED/NOT_COMPLIANCE", "NOT_FOUND/SUBJECT_NOT_FOUND"],
    },
    {
      name: "transitionLifecycle",
      schema: TransitionLifecycleInput,
      base: () => ({ path: "tenants/t-acme/orders/o-1001", to: "SOFT_DELETED", reason: "fuzz", correlationId: "fz-1" }),
      privileged: "rita",
      unprivileged: "clara",
      refusals: () =>
        fc.oneof(
          // ACTIVE documents: every move but the legal ACTIVE -> SOFT_DELETED.
          fc.tuple(fc.constantFrom(...activeGoverned.filter((p) => p !== "tenants/t-acme/orders/o-1002")), fc.constantFrom("ACTIVE", "ARCHIVED", "PURGE_ELIGIBLE", "LEGAL_HOLD", "PURGED")).map(([path, to]) => ({
            payload: { path, to, reason: "r" },
            token: "rita" as const,
          })),
          // The held order: nothing moves it.
          fc.constantFrom(...LIFECYCLE_STATES).map((to) => ({ payload: { path: "tenants/t-acme/orders/o-1002", to, reason: "r" }, token: "rita" as const })),
          fc.tuple(fc.constantFrom("events", "tenants", "auditRecords", "deletionAudits", "nowhere"), fuzzId, fc.constantFrom(...LIFECYCLE_STATES)).map(([c, id, to]) => ({
            payload: { path: `${c}/${id}`, to, reason: "r" },
            token: "rita" as const,
          })),
        ),
      documented: [
        "PERMISSION_DENIED/NOT_RETENTION_ADMIN",
        "NOT_FOUND/DOCUMENT_NOT_FOUND",
        "INVALID_ARGUMENT/NOT_GOVERNED_PATH",
        "FAILED_PRECONDITION/INVALID_LIFECYCLE_*",
        "FAILED_PRECONDITION/HOLD_VIA_PLACE_RETENTION_HOLD",
        "FAILED_PRECONDITION/PURGE_ONLY_BY_ENGINE",
        "FAILED_PRECONDITION/LEGAL_HOLD",
      ],
    },
    {
      name: "approvePurgeRun",
      schema: ApprovePurgeRunInput,
      base: () => ({ runKey: ctx.waitingRunKey, decision: "DENY", note: "fuzz" }),
      privileged: "rita",
      unprivileged: "clara",
      refusals: () =>
        fc.oneof(
          // Well-formed keys no tripped run recorded.
          fc.tuple(hex32.filter((k) => k !== ctx.waitingRunKey && k !== ctx.usedRunKey), fc.constantFrom("APPROVE", "DENY")).map(([runKey, decision]) => ({
            payload: { runKey, decision, note: "n" },
            token: "rita" as const,
          })),
          fc.tuple(fc.constantFrom<TokenRole>("ada", "ben", "clara", "dev", "stranger"), fc.constantFrom("APPROVE", "DENY")).map(([token, decision]) => ({
            payload: { runKey: ctx.waitingRunKey, decision, note: "n" },
            token,
          })),
          fc.constantFrom("APPROVE", "DENY").map((decision) => ({ payload: { runKey: ctx.usedRunKey, decision, note: "n" }, token: "rita" as const })),
        ),
      documented: ["PERMISSION_DENIED/NOT_RETENTION_ADMIN", "NOT_FOUND/BRAKE_RUN_NOT_FOUND", "FAILED_PRECONDITION/BRAKE_RUN_USED"],
    },
    {
      name: "requestTenantDeletion",
      schema: RequestTenantDeletionInput,
      base: () => ({ tenantId: "t-acme", reason: "fuzz" }),
      alternates: () => [{ subject: { type: "scope", id: "t-acme" }, reason: "fuzz" }],
      privileged: "rita",
      unprivileged: "clara",
      refusals: () =>
        fc.oneof(
          fuzzId.map((tenantId) => ({ payload: { tenantId, reason: "r" }, token: "rita" as const })),
          fuzzId.map((id) => ({ payload: { subject: { type: "scope", id }, reason: "r" }, token: "rita" as const })),
          fc.constantFrom<TokenRole>("ada", "ben", "clara", "dev", "stranger").map((token) => ({ payload: { tenantId: "t-acme", reason: "r" }, token })),
        ),
      documented: ["PERMISSION_DENIED/NOT_RETENTION_ADMIN", "NOT_FOUND/SUBJECT_NOT_FOUND"],
    },
    {
      name: "approveTenantDeletion",
      schema: ApproveTenantDeletionInput,
      base: () => ({ requestId: ctx.closureRequestId }),
      privileged: "clara",
      unprivileged: "ada",
      refusals: () =>
        fc.oneof(
          fuzzId.map((requestId) => ({ payload: { requestId }, token: "clara" as const })),
          // A user's erasure is no closure; the requester may never approve; app users and strangers hold no staff role.
          fc.constant({ payload: { requestId: ctx.benRequestId }, token: "dev" as const }),
          fc.constant({ payload: { requestId: ctx.closureRequestId }, token: "rita" as const }),
          fc.constantFrom<TokenRole>("ada", "ben", "stranger").map((token) => ({ payload: { requestId: ctx.closureRequestId }, token })),
        ),
      documented: ["PERMISSION_DENIED/NOT_STAFF", "NOT_FOUND/REQUEST_NOT_FOUND", "PERMISSION_DENIED/TWO_PERSON_RULE"],
    },
    {
      name: "cancelTenantDeletion",
      schema: CancelTenantDeletionInput,
      base: () => ({ requestId: ctx.closureRequestId, reason: "fuzz" }),
      privileged: "rita",
      unprivileged: "clara",
      refusals: () =>
        fc.oneof(
          fuzzId.map((requestId) => ({ payload: { requestId, reason: "r" }, token: "rita" as const })),
          fc.constant({ payload: { requestId: ctx.benRequestId, reason: "r" }, token: "rita" as const }),
          fc.constantFrom<TokenRole>("ada", "ben", "clara", "dev", "stranger").map((token) => ({ payload: { requestId: ctx.closureRequestId, reason: "r" }, token })),
        ),
      documented: ["PERMISSION_DENIED/NOT_RETENTION_ADMIN", "NOT_FOUND/REQUEST_NOT_FOUND"],
    },
    {
      name: "runRetentionJob",
      schema: RunRetentionJobInput,
      base: () => ({ job: "retentionAudit", dryRun: true, asOf: "2030-01-01T00:00:00Z" }),
      privileged: "rita",
      unprivileged: "clara",
      refusals: () =>
        fc
          .tuple(fc.constantFrom("nightlyPurge", "retentionAudit", "expiryBackfill"), fc.option(fc.boolean(), { nil: undefined }), fc.constantFrom<TokenRole>("clara", "dev", "ada", "stranger"))
          .map(([job, dryRun, token]) => ({ payload: dryRun === undefined ? { job } : { job, dryRun }, token })),
      documented: ["PERMISSION_DENIED/NOT_RETENTION_ADMIN"],
    },
    {
      name: "listDeletionRequests",
      schema: ListDeletionRequestsInput,
      base: () => ({ state: "PENDING", overdueOnly: false, pageSize: 10 }),
      alternates: () => [{ subject: { type: "user", uid: "u-1002", scope: "t-acme" }, pageSize: 10 }, { subject: { type: "scope", id: "t-acme" } }],
      privileged: "clara",
      unprivileged: "ada",
      refusals: () =>
        fc.oneof(
          fuzzId.map((cursor) => ({ payload: { cursor }, token: "clara" as const })),
          fc.tuple(fc.constantFrom({ type: "user", uid: "u-1002" }, { type: "scope", id: "t-acme" }), fuzzId).map(([subject, cursor]) => ({ payload: { subject, cursor }, token: "clara" as const })),
          fc.constantFrom<TokenRole>("ada", "ben", "rita", "stranger").map((token) => ({ payload: { state: "PENDING" }, token })),
        ),
      documented: ["PERMISSION_DENIED/NOT_COMPLIANCE", "INVALID_ARGUMENT/INVALID_CURSOR"],
    },
    {
      name: "listRetentionHolds",
      schema: ListRetentionHoldsInput,
      base: () => ({ state: "ACTIVE", reasonCode: "FINANCE_RETENTION", placedBy: "c-2001", targetPath: "tenants/t-acme/orders/o-1002", pageSize: 5 }),
      privileged: "clara",
      unprivileged: "ada",
      refusals: () =>
        fc.oneof(
          fuzzId.map((cursor) => ({ payload: { cursor }, token: "dev" as const })),
          fc.constantFrom<TokenRole>("ada", "ben", "rita", "stranger").map((token) => ({ payload: {}, token })),
          fc.constantFrom("nobody@atlasmart.test", "ada@atlasmart.test").map((placedBy) => ({ payload: { placedBy }, token: "clara" as const })),
        ),
      documented: ["PERMISSION_DENIED/NOT_COMPLIANCE", "INVALID_ARGUMENT/INVALID_CURSOR", "NOT_FOUND/STAFF_NOT_FOUND"],
    },
    {
      name: "listBrakeRuns",
      schema: ListBrakeRunsInput,
      base: () => ({ state: "WAITING", pageSize: 5 }),
      privileged: "rita",
      unprivileged: "ada",
      refusals: () =>
        fc.oneof(
          fuzzId.map((cursor) => ({ payload: { cursor }, token: "rita" as const })),
          fc.constantFrom<TokenRole>("ada", "ben", "stranger").map((token) => ({ payload: {}, token })),
        ),
      documented: ["PERMISSION_DENIED/NOT_RETENTION_ADMIN", "INVALID_ARGUMENT/INVALID_CURSOR"],
    },
    {
      name: "explainDeletion",
      schema: ExplainDeletionInput,
      base: () => ({ path: "tenants/t-acme/orders/o-1002", pageSize: 5, verify: "entries" }),
      alternates: () => [{ subject: { type: "user", uid: "u-1002", scope: "t-acme" }, pageSize: 5 }, { subject: { type: "scope", id: "t-acme" }, verify: "entries" }],
      privileged: "clara",
      unprivileged: "rita",
      refusals: () =>
        fc.oneof(
          fc.tuple(fc.constantFrom({ type: "user", uid: "u-1002" }, { type: "scope", id: "t-acme" }), fuzzId).map(([subject, cursor]) => ({ payload: { subject, cursor }, token: "clara" as const })),
          fc.tuple(fc.constantFrom(...docPaths), fuzzId).map(([path, cursor]) => ({ payload: { path, cursor }, token: "clara" as const })),
          fc.tuple(fc.constantFrom<TokenRole>("ada", "ben", "rita", "stranger"), fc.constantFrom(...docPaths)).map(([token, path]) => ({ payload: { path }, token })),
          fuzzId.map((requestId) => ({ payload: { requestId }, token: "ada" as const })),
        ),
      documented: ["PERMISSION_DENIED/NOT_COMPLIANCE", "INVALID_ARGUMENT/INVALID_CURSOR"],
    },
    {
      name: "confirmProcessorNotice",
      schema: ConfirmProcessorNoticeInput,
      base: () => ({ requestId: "fz-none", processor: "support-desk", receiptId: "TICKET-1" }),
      privileged: "clara",
      unprivileged: "rita",
      refusals: () =>
        fc.oneof(
          // No request has a notice for these: nothing to confirm.
          fc.tuple(fuzzId, fc.constantFrom("support-desk", "search-index", "no-such-vendor")).map(([requestId, processor]) => ({ payload: { requestId, processor, receiptId: "R-1" }, token: "clara" as const })),
          fc.constantFrom<TokenRole>("ada", "ben", "rita", "stranger").map((token) => ({ payload: { requestId: "fz-none", processor: "support-desk", receiptId: "R-1" }, token })),
        ),
      documented: ["PERMISSION_DENIED/NOT_COMPLIANCE", "NOT_FOUND/PROCESSOR_NOTICE_NOT_FOUND"],
    },
    {
      name: "getRetentionReport",
      schema: GetRetentionReportInput,
      base: () => ({ skipSubjects: true }),
      privileged: "clara",
      unprivileged: "ada",
      refusals: () => fc.tuple(fc.constantFrom<TokenRole>("ada", "ben", "rita", "stranger"), fc.option(fc.boolean(), { nil: undefined })).map(([token, skipSubjects]) => ({ payload: skipSubjects === undefined ? {} : { skipSubjects }, token })),
      documented: ["PERMISSION_DENIED/NOT_COMPLIANCE"],
    },
    {
      // Ben's request was extended in the set-up: a well-formed extension by staff with a written reason reaches
      // ALREADY_EXTENDED, and writes nothing like every other refusal.
      name: "extendRequestDeadline",
      schema: ExtendRequestDeadlineInput,
      base: () => ({ requestId: ctx.benRequestId, reason: "The request spans several archive systems." }),
      alternates: () => [{ requestId: ctx.benRequestId, reason: "The request spans several archive systems.", until: "2031-01-01T00:00:00Z" }],
      privileged: "clara",
      unprivileged: "ada",
      refusals: () =>
        fc.oneof(
          fuzzId.map((requestId) => ({ payload: { requestId, reason: "a written reason of some length" }, token: "clara" as const })),
          fc.string({ maxLength: 9 }).map((reason) => ({ payload: { requestId: ctx.benRequestId, reason }, token: "rita" as const })),
          fc.string({ minLength: 10, maxLength: 500 }).filter((r) => r.trim().length >= 10).map((reason) => ({ payload: { requestId: ctx.benRequestId, reason }, token: "clara" as const })),
          fc.constantFrom<TokenRole>("ada", "ben", "stranger").map((token) => ({ payload: { requestId: ctx.benRequestId, reason: "a written reason of some length" }, token })),
        ),
      documented: ["PERMISSION_DENIED/NOT_STAFF", "NOT_FOUND/REQUEST_NOT_FOUND", "INVALID_ARGUMENT/EXTENSION_REASON_REQUIRED", "FAILED_PRECONDITION/ALREADY_EXTENDED"],
    },
    {
      // Ada's export is ready (built in the set-up): her own ask returns it, so a well-formed ask is sent by those with no scope.
      name: "requestDataExport",
      schema: RequestDataExportInput,
      base: () => ({}),
      privileged: "ada",
      unprivileged: "stranger",
      refusals: () => fc.constantFrom<TokenRole>("clara", "rita", "stranger").map((token) => ({ payload: {}, token })),
      documented: ["PERMISSION_DENIED/NO_TENANT_CLAIM"],
    },
    {
      name: "getDataExport",
      schema: GetDataExportInput,
      base: () => ({ exportId: ctx.adaExportId }),
      alternates: () => [{ exportId: ctx.adaExportId, from: 0 }],
      privileged: "ada",
      unprivileged: "ben",
      refusals: () =>
        fc.oneof(
          fuzzId.map((exportId) => ({ payload: { exportId }, token: "ada" as const })),
          fc.tuple(fc.constantFrom<TokenRole>("ben", "clara", "rita", "stranger"), fc.option(fc.nat({ max: 1_000_000 }), { nil: undefined })).map(([token, from]) => ({ payload: { exportId: ctx.adaExportId, ...(from === undefined ? {} : { from }) }, token })),
        ),
      documented: ["NOT_FOUND/EXPORT_NOT_FOUND", "PERMISSION_DENIED/NOT_OWNER"],
    },
    {
      name: "exportSubjectData",
      schema: ExportSubjectDataInput,
      base: () => ({ uid: "u-1001", reference: "ticket 42" }),
      privileged: "clara",
      unprivileged: "ada",
      refusals: () =>
        fc.oneof(
          fuzzId.map((uid) => ({ payload: { uid, reference: "ticket 42" }, token: "clara" as const })),
          fc.constantFrom<TokenRole>("ada", "ben", "rita", "stranger").map((token) => ({ payload: { uid: "u-1001", reference: "ticket 42" }, token })),
        ),
      documented: ["PERMISSION_DENIED/NOT_COMPLIANCE", "NOT_FOUND/SUBJECT_NOT_FOUND"],
    },
    {
      name: "getRetentionRegistry",
      schema: GetRetentionRegistryInput,
      base: () => ({}),
      privileged: "clara",
      unprivileged: "ada",
      refusals: () => fc.constantFrom<TokenRole>("ada", "ben", "stranger").map((token) => ({ payload: {}, token })),
      documented: ["PERMISSION_DENIED/NOT_STAFF"],
    },
  ];
}

function matches(outcome: string, documented: string[]): boolean {
  return documented.some((d) => (d.endsWith("*") ? outcome.startsWith(d.slice(0, -1)) : outcome === d));
}

/** Runs tasks with at most `limit` in flight. */
async function pool<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

describe(`fuzzing every callable (${RUNS} payloads each, seed ${SEED})`, () => {
  let all: Spec[];
  let tokens: Tokens;
  beforeAll(async () => {
    tokens = await freshDemo();
    const { requestId } = await callExpect<{ requestId: string }>("requestAccountDeletion", {}, tokens.ben);
    // Ben's request runs on AtlasMart's legal clock (GDPR): its one extension is granted now, so every extension the
    // fuzz sends is a refusal that writes nothing (ALREADY_EXTENDED at best).
    await callExpect("extendRequestDeadline", { requestId, reason: "The request spans several archive systems." }, tokens.clara);
    // A tenant's closure awaiting its approval: the target of approve and cancel payloads (nothing hidden yet).
    const closure = await callExpect<{ requestId: string; state: string }>("requestTenantDeletion", { tenantId: "t-acme", reason: "fuzz target" }, tokens.rita);
    expect(closure.state).toBe("AWAITING_APPROVAL");
    const { holdId } = await callExpect<{ holdId: string }>(
      "placeRetentionHold",
      { targetPath: "tenants/t-acme/orders/o-1002", reasonCode: "FINANCE_RETENTION", releaseAfter: "2031-01-01T00:00:00Z" },
      tokens.clara,
    );
    expect((await docData("tenants/t-acme/orders/o-1002")).legalHold).toBe(true);
    // Two deletion sets the brake recorded: one waiting, one already run under an approval.
    const waitingRunKey = "a".repeat(32);
    const usedRunKey = "b".repeat(32);
    for (const [runKey, state] of [
      [waitingRunKey, "WAITING"],
      [usedRunKey, "USED"],
    ] as const) {
      await db().doc(`retentionJobs/brake-${runKey}`).set({ runKey, state, units: ["sweep-events"], wouldDelete: 40, decision: null });
    }
    // Ada's access export, built by the buildDataExport task before anything is fuzzed (so nothing changes under a snapshot).
    const { exportId } = await callExpect<{ exportId: string }>("requestDataExport", {}, tokens.ada);
    await waitFor(async () => (await db().doc(`dataExports/${exportId}`).get()).get("state") === "READY", "Ada's export built", 120_000);
    all = specs({ benRequestId: requestId, closureRequestId: closure.requestId, financeHoldId: holdId, waitingRunKey, usedRunKey, adaExportId: exportId, tokens });
  }, 120_000);

  const names = [
    "requestAccountDeletion",
    "cancelAccountDeletion",
    "getDeletionStatus",
    "placeRetentionHold",
    "releaseRetentionHold",
    "planDeletion",
    "transitionLifecycle",
    "runRetentionJob",
    "approvePurgeRun",
    "requestTenantDeletion",
    "approveTenantDeletion",
    "cancelTenantDeletion",
    "listDeletionRequests",
    "listRetentionHolds",
    "listBrakeRuns",
    "explainDeletion",
    "getRetentionReport",
    "getRetentionRegistry",
    "extendRequestDeadline",
    "requestDataExport",
    "getDataExport",
    "exportSubjectData",
    "confirmProcessorNotice",
  ];
  for (const [index, name] of names.entries()) {
    it(`${name}: only invalid-argument or documented refusals, and nothing written`, async () => {
      const spec = all.find((s) => s.name === name)!;
      const cases = fc.sample(fc.oneof({ arbitrary: mutations(spec), weight: 3 }, { arbitrary: spec.refusals(), weight: 2 }), { numRuns: RUNS, seed: SEED + index });
      const before = await snapshotDatabase();
      const outcomes = await pool(cases, IN_FLIGHT, async (c) => {
        // What the server sees after the wire's JSON round trip, and what an absent payload means (`{}`).
        const wire = (JSON.parse(JSON.stringify({ data: c.payload ?? null })) as { data: unknown }).data;
        const token = c.token ?? (spec.schema.safeParse(wire ?? {}).success ? spec.unprivileged : spec.privileged);
        const r = await call(name, wire, tokens[token]);
        const outcome = r.ok ? "OK" : `${r.error.status}/${r.error.details?.reason ?? ""}`;
        return { outcome, payload: wire, token };
      });
      const unexpected = outcomes.filter((o) => !(o.outcome === "INVALID_ARGUMENT/INVALID_ARGUMENT" || o.outcome === "INVALID_ARGUMENT/" || matches(o.outcome, spec.documented)));
      expect(unexpected.slice(0, 5), `seed ${SEED + index}`).toEqual([]);
      const counts = new Map<string, number>();
      for (const o of outcomes) counts.set(o.outcome, (counts.get(o.outcome) ?? 0) + 1);
      // Not vacuous: the schema refused many, and documented refusals were reached.
      expect(counts.get("INVALID_ARGUMENT/INVALID_ARGUMENT") ?? 0).toBeGreaterThan(RUNS / 4);
      expect(outcomes.filter((o) => matches(o.outcome, spec.documented)).length).toBeGreaterThan(RUNS / 10);
      expect(outcomes).toHaveLength(RUNS);
      expect(await snapshotDatabase()).toEqual(before);
    }, 600_000);
  }
});
