/**
 * A request group's cancel against the purge, under real concurrency: the cancel moves every member in one
 * transaction that reads each member's state and purge lease, so a group is cancelled whole or taken whole, never
 * split (one member erased, another restored). And a scope named in an app without a scope kind is refused with
 * NO_SCOPE_KIND wherever a subject is named.
 */
import { getAuth } from "firebase-admin/auth";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { cancelAccountDeletionHandler } from "../../../functions/src/entrypoints/callable/cancel-account-deletion";
import { explainDeletionHandler } from "../../../functions/src/entrypoints/callable/explain-deletion";
import { listDeletionRequestsHandler } from "../../../functions/src/entrypoints/callable/list-deletion-requests";
import { planDeletionHandler } from "../../../functions/src/entrypoints/callable/plan-deletion";
import { requestAccountDeletionHandler } from "../../../functions/src/entrypoints/callable/request-account-deletion";
import { requestTenantDeletionHandler } from "../../../functions/src/entrypoints/callable/request-tenant-deletion";
import type { Caller } from "../../../functions/src/entrypoints/callable/shared";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { governedToFirestore } from "../../../functions/src/platform/governed-doc";
import { policy, useRegistryForTests } from "../../../functions/src/platform/registry";
import { settings } from "../../../functions/src/platform/settings";
import { runNightlyPurge, type PurgeHook, type UnitReport } from "../../../functions/src/purge/index";
import { PATH_LOOKUP, WORKSPACES_DATABASE, workspacesRegistry } from "../../fixtures/workspaces/registry";
import { adminApp, clearAuth, clearFirestore, db } from "../../helpers/emulator";
import { smallAppRegistry } from "../../helpers/policy";
import { useDatabase } from "../purge/support";

useDatabase(WORKSPACES_DATABASE);

const ADA: Caller = { uid: "u-ada", tenantId: null, roles: [] };
const CLARA: Caller = { uid: "c-2001", tenantId: null, roles: ["compliance"] };
const RITA: Caller = { uid: "r-3001", tenantId: null, roles: ["retention-admin"] };
const CREATED = Date.parse("2026-06-01T00:00:00Z");
const ADA_DOCS = ["workspaces/w-a/members/m-1", "workspaces/w-a/docs/d-1", "workspaces/w-b/members/m-2", "workspaces/w-b/docs/d-2", "people/u-ada"];

async function seed(): Promise<void> {
  await clearFirestore(settings.databaseId());
  await clearAuth();
  const pol = policy();
  const put = async (path: string, tenantId: string, data: Record<string, unknown>) => {
    const cls = pol.classForPath(path)!;
    await db()
      .doc(path)
      .set({ ...data, ...governedToFirestore({ retentionClass: cls.id, lifecycleState: "ACTIVE", tenantId, policyVersion: pol.version, createdAtMs: CREATED, expireAtMs: null, retainUntilMs: null, legalHold: false, holdIds: [], preHold: null }, "set") });
  };
  for (const w of ["w-a", "w-b"]) await put(`workspaces/${w}`, w, { name: w });
  await put("workspaces/w-a/members/m-1", "w-a", { uid: "u-ada" });
  await put("workspaces/w-b/members/m-2", "w-b", { uid: "u-ada" });
  await put("workspaces/w-a/docs/d-1", "w-a", { authorUid: "u-ada" });
  await put("workspaces/w-b/docs/d-2", "w-b", { authorUid: "u-ada" });
  await put("people/u-ada", "", { displayName: "Ada" });
  await getAuth(adminApp()).createUser({ uid: "u-ada" });
}

const states = async () => (await db().collection("deletionRequests").where("uid", "==", "u-ada").get()).docs.map((d) => String(d.get("state"))).sort();
const lifecycle = async (path: string) => (await db().doc(path).get()).get("lifecycleState") as string | undefined;

/** The purge of one member, as its own purgeRequest task runs it (its grace over), with an optional hook. */
const purgeMember = (requestId: string, asOfMs: number, hook?: PurgeHook) =>
  runNightlyPurge({ nowMs: asOfMs, asOfMs, dryRun: false, actor: { type: "system", id: "nightlyPurge" }, correlationId: `race-${requestId}`, leaseMs: 60_000, batchSize: 2, requestIds: [requestId], sweep: false, ...(hook ? { hook } : {}) });

/** A group is never split: cancelled whole (every document back), or not cancelled at all (no member cancelled). */
async function expectNotSplit(): Promise<"cancelled" | "taken"> {
  const s = await states();
  const cancelled = s.filter((x) => x === "CANCELLED" || x === "CANCELLING").length;
  expect([0, s.length], `member states ${s.join(",")}`).toContain(cancelled);
  if (cancelled === s.length) {
    for (const p of ADA_DOCS) expect(await lifecycle(p), p).toBe("ACTIVE");
    return "cancelled";
  }
  return "taken";
}

describe("a request group's cancel against the purge", () => {
  beforeAll(() => useRegistryForTests(workspacesRegistry([PATH_LOOKUP])));
  afterAll(() => useRegistryForTests(undefined));
  beforeEach(seed);

  it("a member leased by the purge makes the whole group's cancel refuse, and nothing is restored", async () => {
    const opened = await requestAccountDeletionHandler({}, ADA);
    const [lead, other] = opened.group!.requests.map((r) => r.requestId) as [string, string];
    const graceEndsAtMs = Date.parse(opened.graceEndsAt);
    let refusal: unknown = null;
    // The owner cancels while the purge holds the other member's lease (taken, not yet PROCESSING); the owner's
    // clock is still inside the grace period.
    const run = await purgeMember(other, graceEndsAtMs + 1, async (ctx) => {
      if (ctx.point !== "afterLease") return;
      refusal = await cancelAccountDeletionHandler({ requestId: lead }, ADA).catch((e: unknown) => e);
    });
    expect(refusal).toMatchObject({ reason: "ALREADY_PROCESSING" });
    expect((run.units as UnitReport[]).map((u) => u.outcome)).toEqual(["DONE"]);
    expect(await expectNotSplit()).toBe("taken");
    expect(await states()).toEqual(["PENDING", "PURGED"]);
  });

  it("a cancel that commits first leaves the purge nothing to take: both members are restored", async () => {
    const opened = await requestAccountDeletionHandler({}, ADA);
    const [, other] = opened.group!.requests.map((r) => r.requestId) as [string, string];
    const graceEndsAtMs = Date.parse(opened.graceEndsAt);
    await cancelAccountDeletionHandler({ requestId: other }, ADA);
    const run = await purgeMember(other, graceEndsAtMs + DAY_MS);
    expect((run.units as UnitReport[]).filter((u) => u.kind === "request")).toEqual([]);
    expect(await expectNotSplit()).toBe("cancelled");
  });

  it("a cancel and both members' purges started at once never split the group (6 rounds)", async () => {
    const outcomes: string[] = [];
    for (let round = 0; round < 6; round++) {
      if (round > 0) await seed();
      const opened = await requestAccountDeletionHandler({}, ADA);
      const ids = opened.group!.requests.map((r) => r.requestId);
      const asOf = Date.parse(opened.graceEndsAt) + 1;
      const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));
      const results = await Promise.allSettled([
        delay(round * 15).then(() => cancelAccountDeletionHandler({ requestId: ids[0]! }, ADA)),
        purgeMember(ids[0]!, asOf),
        purgeMember(ids[1]!, asOf),
      ]);
      const cancel = results[0];
      if (cancel.status === "rejected") expect(cancel.reason).toMatchObject({ reason: "ALREADY_PROCESSING" });
      for (const r of results.slice(1)) expect(r.status).toBe("fulfilled");
      const outcome = await expectNotSplit();
      outcomes.push(outcome);
      // A group the cancel lost to is erased in full by the runs still to come; never half erased, half restored.
      if (outcome === "taken") {
        for (const id of ids) await purgeMember(id, asOf + DAY_MS);
        expect(await states()).toEqual(["PURGED", "PURGED"]);
      }
    }
    expect(outcomes).toHaveLength(6);
  });
});

describe("a scope in an app without a scope kind", () => {
  beforeAll(() => useRegistryForTests(smallAppRegistry()));
  afterAll(() => useRegistryForTests(undefined));

  it("is refused with NO_SCOPE_KIND wherever a subject is named", async () => {
    const refused = { reason: "NO_SCOPE_KIND" };
    await expect(planDeletionHandler({ subject: { type: "scope", id: "w-1" } }, CLARA)).rejects.toMatchObject(refused);
    await expect(planDeletionHandler({ subject: { type: "user", uid: "u-1", scope: "w-1" } }, CLARA)).rejects.toMatchObject(refused);
    await expect(planDeletionHandler({ tenantId: "w-1" }, CLARA)).rejects.toMatchObject(refused);
    await expect(requestTenantDeletionHandler({ subject: { type: "scope", id: "w-1" }, reason: "r" }, RITA)).rejects.toMatchObject(refused);
    await expect(listDeletionRequestsHandler({ subject: { type: "scope", id: "w-1" } }, CLARA)).rejects.toMatchObject(refused);
    await expect(listDeletionRequestsHandler({ subject: { type: "user", uid: "u-1", scope: "w-1" } }, CLARA)).rejects.toMatchObject(refused);
    await expect(explainDeletionHandler({ subject: { type: "scope", id: "w-1" } }, CLARA)).rejects.toMatchObject(refused);
    // A user alone is a subject there: in no scope.
    expect((await listDeletionRequestsHandler({ subject: { type: "user", uid: "u-1" } }, CLARA)).items).toEqual([]);
  });
});
