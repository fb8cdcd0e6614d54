/**
 * The callable contract (functions/src/contract/) is the one source of every callable's schemas: the deployed
 * callables are exactly its list, each entry point validates with the contract's own schema object, each
 * handler's result has the contract's output type, and the console's hold-target check says what the server
 * says.
 */
import { describe, expect, it, vi } from "vitest";
import type { z } from "zod";
import { CALLABLE_NAMES, CALLABLES, holdTargetVerdict, type CallableOutput } from "../../../functions/src/contract";
import { DEMO_DOCS } from "../../../examples/atlasmart/data";
import { DomainError } from "../../../functions/src/kernel/errors";
import { explainQueryOf } from "../../../functions/src/evidence/explain";
import { assertHoldableClass, classifyHoldTarget, holdClassForPath } from "../../../functions/src/holds/rules";
import type { approvePurgeRunHandler } from "../../../functions/src/entrypoints/callable/approve-purge-run";
import type { confirmProcessorNoticeHandler } from "../../../functions/src/entrypoints/callable/confirm-processor-notice";
import type { approveTenantDeletionHandler } from "../../../functions/src/entrypoints/callable/approve-tenant-deletion";
import type { cancelTenantDeletionHandler } from "../../../functions/src/entrypoints/callable/cancel-tenant-deletion";
import type { requestTenantDeletionHandler } from "../../../functions/src/entrypoints/callable/request-tenant-deletion";
import type { cancelAccountDeletionHandler } from "../../../functions/src/entrypoints/callable/cancel-account-deletion";
import type { explainDeletionHandler } from "../../../functions/src/entrypoints/callable/explain-deletion";
import type { getDeletionStatusHandler } from "../../../functions/src/entrypoints/callable/get-deletion-status";
import type { getRetentionReportHandler } from "../../../functions/src/entrypoints/callable/get-retention-report";
import type { getRetentionRegistryHandler } from "../../../functions/src/entrypoints/callable/get-retention-registry";
import type { listBrakeRunsHandler } from "../../../functions/src/entrypoints/callable/list-brake-runs";
import type { listDeletionRequestsHandler } from "../../../functions/src/entrypoints/callable/list-deletion-requests";
import type { listRetentionHoldsHandler } from "../../../functions/src/entrypoints/callable/list-retention-holds";
import type { placeRetentionHoldHandler } from "../../../functions/src/entrypoints/callable/place-retention-hold";
import type { planDeletionHandler } from "../../../functions/src/entrypoints/callable/plan-deletion";
import type { releaseRetentionHoldHandler } from "../../../functions/src/entrypoints/callable/release-retention-hold";
import type { requestAccountDeletionHandler } from "../../../functions/src/entrypoints/callable/request-account-deletion";
import type { runRetentionJobHandler } from "../../../functions/src/entrypoints/callable/run-retention-job";
import type { transitionLifecycleHandler } from "../../../functions/src/entrypoints/callable/transition-lifecycle";
import type { extendRequestDeadlineHandler } from "../../../functions/src/entrypoints/callable/extend-request-deadline";
import type { requestDataExportHandler } from "../../../functions/src/entrypoints/callable/request-data-export";
import type { getDataExportHandler } from "../../../functions/src/entrypoints/callable/get-data-export";
import type { exportSubjectDataHandler } from "../../../functions/src/entrypoints/callable/export-subject-data";
import { policy } from "../../../functions/src/platform/registry";

type Out<F extends (...args: never[]) => Promise<unknown>> = Awaited<ReturnType<F>>;
/** Compiles only when A is assignable to B: a handler's result must be what the contract promises. */
const conforms = <A extends B, B>(value?: A): boolean => value === undefined;

describe("the callable contract", () => {
  it("lists exactly the deployed callables, and each entry point validates with the contract's schema object", async () => {
    vi.stubEnv("GCLOUD_PROJECT", "demo-atlasmart-firestore");
    const deployed = (await import("../../../functions/src/index")) as Record<string, unknown>;
    const callables = Object.entries(deployed)
      .filter(([, fn]) => (fn as { __endpoint?: { callableTrigger?: unknown } }).__endpoint?.callableTrigger !== undefined)
      .map(([name]) => name)
      .sort();
    expect(callables).toEqual([...CALLABLE_NAMES].sort());
    const entry = (file: string) => import(`../../../functions/src/entrypoints/callable/${file}.ts`) as Promise<Record<string, unknown>>;
    const inputOf: [string, string, string][] = [
      ["requestAccountDeletion", "request-account-deletion", "RequestAccountDeletionInput"],
      ["cancelAccountDeletion", "cancel-account-deletion", "CancelAccountDeletionInput"],
      ["getDeletionStatus", "get-deletion-status", "GetDeletionStatusInput"],
      ["listDeletionRequests", "list-deletion-requests", "ListDeletionRequestsInput"],
      ["requestTenantDeletion", "request-tenant-deletion", "RequestTenantDeletionInput"],
      ["approveTenantDeletion", "approve-tenant-deletion", "ApproveTenantDeletionInput"],
      ["cancelTenantDeletion", "cancel-tenant-deletion", "CancelTenantDeletionInput"],
      ["placeRetentionHold", "place-retention-hold", "PlaceRetentionHoldInput"],
      ["releaseRetentionHold", "release-retention-hold", "ReleaseRetentionHoldInput"],
      ["listRetentionHolds", "list-retention-holds", "ListRetentionHoldsInput"],
      ["planDeletion", "plan-deletion", "PlanDeletionInput"],
      ["explainDeletion", "explain-deletion", "ExplainDeletionInput"],
      ["getRetentionReport", "get-retention-report", "GetRetentionReportInput"],
      ["getRetentionRegistry", "get-retention-registry", "GetRetentionRegistryInput"],
      ["transitionLifecycle", "transition-lifecycle", "TransitionLifecycleInput"],
      ["runRetentionJob", "run-retention-job", "RunRetentionJobInput"],
      ["listBrakeRuns", "list-brake-runs", "ListBrakeRunsInput"],
      ["approvePurgeRun", "approve-purge-run", "ApprovePurgeRunInput"],
      ["extendRequestDeadline", "extend-request-deadline", "ExtendRequestDeadlineInput"],
      ["requestDataExport", "request-data-export", "RequestDataExportInput"],
      ["getDataExport", "get-data-export", "GetDataExportInput"],
      ["exportSubjectData", "export-subject-data", "ExportSubjectDataInput"],
      ["confirmProcessorNotice", "confirm-processor-notice", "ConfirmProcessorNoticeInput"],
    ];
    expect(inputOf.map(([n]) => n).sort()).toEqual([...CALLABLE_NAMES].sort());
    for (const [name, file, exported] of inputOf) {
      expect((await entry(file))[exported], name).toBe(CALLABLES[name as keyof typeof CALLABLES].input);
    }
  });

  it("each handler returns the contract's output type (checked by the type-checker)", () => {
    const checked = [
      conforms<Out<typeof requestAccountDeletionHandler>, CallableOutput<"requestAccountDeletion">>(),
      conforms<Out<typeof cancelAccountDeletionHandler>, CallableOutput<"cancelAccountDeletion">>(),
      conforms<Out<typeof getDeletionStatusHandler>, CallableOutput<"getDeletionStatus">>(),
      conforms<Out<typeof listDeletionRequestsHandler>, CallableOutput<"listDeletionRequests">>(),
      conforms<Out<typeof requestTenantDeletionHandler>, CallableOutput<"requestTenantDeletion">>(),
      conforms<Out<typeof approveTenantDeletionHandler>, CallableOutput<"approveTenantDeletion">>(),
      conforms<Out<typeof cancelTenantDeletionHandler>, CallableOutput<"cancelTenantDeletion">>(),
      conforms<Out<typeof placeRetentionHoldHandler>, CallableOutput<"placeRetentionHold">>(),
      conforms<Out<typeof releaseRetentionHoldHandler>, CallableOutput<"releaseRetentionHold">>(),
      conforms<Out<typeof listRetentionHoldsHandler>, CallableOutput<"listRetentionHolds">>(),
      conforms<Out<typeof planDeletionHandler>, CallableOutput<"planDeletion">>(),
      conforms<Out<typeof explainDeletionHandler>, CallableOutput<"explainDeletion">>(),
      conforms<Out<typeof getRetentionReportHandler>, CallableOutput<"getRetentionReport">>(),
      conforms<Out<typeof getRetentionRegistryHandler>, CallableOutput<"getRetentionRegistry">>(),
      conforms<Out<typeof transitionLifecycleHandler>, CallableOutput<"transitionLifecycle">>(),
      conforms<Out<typeof runRetentionJobHandler>, CallableOutput<"runRetentionJob">>(),
      conforms<Out<typeof listBrakeRunsHandler>, CallableOutput<"listBrakeRuns">>(),
      conforms<Out<typeof approvePurgeRunHandler>, CallableOutput<"approvePurgeRun">>(),
      conforms<Out<typeof extendRequestDeadlineHandler>, CallableOutput<"extendRequestDeadline">>(),
      conforms<Out<typeof requestDataExportHandler>, CallableOutput<"requestDataExport">>(),
      conforms<Out<typeof getDataExportHandler>, CallableOutput<"getDataExport">>(),
      conforms<Out<typeof exportSubjectDataHandler>, CallableOutput<"exportSubjectData">>(),
      conforms<Out<typeof confirmProcessorNoticeHandler>, CallableOutput<"confirmProcessorNotice">>(),
    ];
    expect(checked).toHaveLength(CALLABLE_NAMES.length);
  });

  it("every schema emits JSON Schema (docs/CALLABLES.md is generated from them)", async () => {
    const { z: zod } = await import("zod");
    for (const name of CALLABLE_NAMES) {
      for (const schema of [CALLABLES[name].input, CALLABLES[name].output] as z.ZodType[]) {
        const json = zod.toJSONSchema(schema, { io: "input", unrepresentable: "any" });
        expect(typeof json, name).toBe("object");
      }
    }
  });

  it("the console's hold-target check agrees with placeRetentionHold's own checks on every path it is given", () => {
    const pol = policy();
    const server = (path: string): string => {
      try {
        const t = classifyHoldTarget(pol, path);
        if (t.targetType === "subtree") return "ok:subtree";
        const cls = holdClassForPath(pol, path);
        if (!cls) return "NOT_GOVERNED_PATH";
        assertHoldableClass(cls);
        return "ok:document";
      } catch (err) {
        if (err instanceof DomainError) return err.reason;
        throw err;
      }
    };
    const paths = [
      ...DEMO_DOCS.map((d) => d.path),
      "archives/arc-1",
      "archives",
      "tenants",
      "tenants/t-acme/pets/p-1",
      "deletionAudits/000000000001",
      "retentionHolds/h-1",
      "unknown/x",
      "tenants/t-acme/orders",
      "a/b/c",
      "events/e-1/x/y",
      "gs://demo-atlasmart-firestore.appspot.com/tenants/t-acme/users/u-1001/receipts/o-1001.pdf",
    ];
    for (const path of paths) {
      const v = holdTargetVerdict(pol, path);
      expect(v.ok ? `ok:${v.targetType}` : v.reason, path).toBe(server(path));
    }
  });
});

describe("a subject in the general form", () => {
  const ok = (schema: z.ZodType, v: unknown) => schema.safeParse(v).success;

  it("takes a user (in one scope, or all) or a scope wherever a subject is named, beside the documented AtlasMart inputs", () => {
    const plan = CALLABLES.planDeletion.input;
    for (const v of [{ subjectUid: "u-1" }, { tenantId: "t-1" }, { subject: { type: "user", uid: "u-1" } }, { subject: { type: "user", uid: "u-1", scope: "w-1" } }, { subject: { type: "scope", id: "w-1" } }]) {
      expect(ok(plan, v), JSON.stringify(v)).toBe(true);
    }
    for (const v of [{ subject: { type: "tenant", tenantId: "t-1" } }, { subject: { type: "scope" } }, { subject: { type: "user", uid: "u/1" } }, { subject: { type: "user", uid: "u-1", extra: 1 } }, { subjectUid: "u-1", subject: { type: "scope", id: "w" } }]) {
      expect(ok(plan, v), JSON.stringify(v)).toBe(false);
    }
    const tenant = CALLABLES.requestTenantDeletion.input;
    expect(ok(tenant, { tenantId: "t-1", reason: "r" })).toBe(true);
    expect(ok(tenant, { subject: { type: "scope", id: "w-1" }, reason: "r" })).toBe(true);
    // A scope's closure takes only a scope.
    expect(ok(tenant, { subject: { type: "user", uid: "u-1" }, reason: "r" })).toBe(false);
    const explain = CALLABLES.explainDeletion.input;
    expect(ok(explain, { subject: { type: "scope", id: "w-1" }, verify: "chain" })).toBe(true);
    expect(ok(explain, { subjectUid: "u-1" })).toBe(true);
  });

  it("a list filtered by subject takes no state or overdue filter with it", () => {
    const list = CALLABLES.listDeletionRequests.input;
    expect(ok(list, { subject: { type: "user", uid: "u-1" }, pageSize: 10 })).toBe(true);
    expect(ok(list, { subject: { type: "scope", id: "w-1" } })).toBe(true);
    expect(ok(list, { state: "PENDING", overdueOnly: true })).toBe(true);
    expect(ok(list, { subject: { type: "scope", id: "w-1" }, state: "PENDING" })).toBe(false);
    expect(ok(list, { subject: { type: "scope", id: "w-1" }, overdueOnly: false })).toBe(false);
  });

  it("the question explain asks, from each input form", () => {
    expect(explainQueryOf({ subjectUid: "u-1" })).toEqual({ kind: "subject", value: "u-1" });
    expect(explainQueryOf({ subject: { type: "user", uid: "u-1" } })).toEqual({ kind: "subject", value: "u-1" });
    expect(explainQueryOf({ subject: { type: "user", uid: "u-1", scope: "w-1" } })).toEqual({ kind: "subject", value: "u-1", scope: "w-1" });
    expect(explainQueryOf({ subject: { type: "scope", id: "w-1" } })).toEqual({ kind: "scope", value: "w-1" });
    expect(explainQueryOf({ requestId: "r-1" })).toEqual({ kind: "request", value: "r-1" });
    expect(explainQueryOf({ path: "a/b" })).toEqual({ kind: "path", value: "a/b" });
  });

  it("outputs keep their documented fields: a request group is optional beside them", () => {
    const out = CALLABLES.requestAccountDeletion.output;
    expect(ok(out, { requestId: "r-1", state: "PENDING", graceEndsAt: "2027-01-01T00:00:00.000Z" })).toBe(true);
    const group = { groupId: "r-1", requests: [{ requestId: "r-1", scope: "w-a", state: "PENDING", lead: true }, { requestId: "r-2", scope: "w-b", state: "PENDING", lead: false }] };
    expect(ok(out, { requestId: "r-1", state: "PENDING", graceEndsAt: "2027-01-01T00:00:00.000Z", group })).toBe(true);
  });
});
