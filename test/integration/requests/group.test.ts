/**
 * A user in two workspaces, erased by one request (a request group), end to end on a test registry whose users are
 * found by a path lookup (workspaces/{workspaceId}/members/{memberId}, the uid in the member's `uid` field): one
 * call opens a request per workspace together; a hold on one workspace keeps that part and not the other; after
 * the release the group ends PURGED and the Auth account goes exactly once. A cancel in the grace period restores
 * both. Two calls at once open one group; two members finishing at once delete the account once.
 */
import { getAuth } from "firebase-admin/auth";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { approveTenantDeletionHandler } from "../../../functions/src/entrypoints/callable/approve-tenant-deletion";
import { cancelAccountDeletionHandler } from "../../../functions/src/entrypoints/callable/cancel-account-deletion";
import { getDeletionStatusHandler } from "../../../functions/src/entrypoints/callable/get-deletion-status";
import { listDeletionRequestsHandler } from "../../../functions/src/entrypoints/callable/list-deletion-requests";
import { planDeletionHandler } from "../../../functions/src/entrypoints/callable/plan-deletion";
import { requestAccountDeletionHandler } from "../../../functions/src/entrypoints/callable/request-account-deletion";
import { requestTenantDeletionHandler } from "../../../functions/src/entrypoints/callable/request-tenant-deletion";
import type { Caller } from "../../../functions/src/entrypoints/callable/shared";
import { readLedger } from "../../../functions/src/erasure/index";
import { placeHold, releaseHoldById } from "../../../functions/src/holds/index";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import type { ScopeLookup } from "../../../functions/src/kernel/policy-schema";
import { governedToFirestore } from "../../../functions/src/platform/governed-doc";
import { policy, useRegistryForTests } from "../../../functions/src/platform/registry";
import { settings } from "../../../functions/src/platform/settings";
import { runNightlyPurge, type PurgeHook, type UnitReport } from "../../../functions/src/purge/index";
import { GROUP_MAX_SCOPES } from "../../../functions/src/requests/rules/group";
import { MEMBERSHIP_LOOKUP, PATH_LOOKUP, WORKSPACES_DATABASE, workspacesRegistry } from "../../fixtures/workspaces/registry";
import { adminApp, clearAuth, clearFirestore, db } from "../../helpers/emulator";
import { seedWorkspaceDocs } from "../../fixtures/workspaces/seed";
import { evidence, expectChainVerifies, expectDeletionsExplained, useDatabase } from "../purge/support";

useDatabase(WORKSPACES_DATABASE);

const ADA: Caller = { uid: "u-ada", tenantId: null, roles: [] };
const CLARA: Caller = { uid: "c-2001", tenantId: null, roles: ["compliance"] };
const CREATED = Date.parse("2026-06-01T00:00:00Z");

/** Ada in workspaces w-a and w-b (Ben in w-a only), her profile, her docs, the Auth accounts. */
async function seed(): Promise<void> {
  await clearFirestore(settings.databaseId());
  await clearAuth();
  await seedWorkspaceDocs();
  const auth = getAuth(adminApp());
  for (const uid of ["u-ada", "u-ben"]) await auth.createUser({ uid, email: `${uid}@example.test` });
}

const ADA_A = ["workspaces/w-a/members/m-1", "workspaces/w-a/docs/d-1"];
const ADA_B = ["workspaces/w-b/members/m-2", "workspaces/w-b/docs/d-2"];
const BEN = ["workspaces/w-a/members/m-3", "workspaces/w-a/docs/d-3", "people/u-ben"];

const stateOf = async (path: string) => (await db().doc(path).get()).get("lifecycleState") as string | undefined;
const exists = async (path: string) => (await db().doc(path).get()).exists;
const accountExists = async (uid: string) =>
  getAuth(adminApp())
    .getUser(uid)
    .then(() => true)
    .catch(() => false);
/** A stored deletion request, as far as these tests read it. */
interface Stored {
  id: string;
  tenantId: string;
  groupId?: string;
  state: string;
  scopedOnly?: boolean;
  fullyGoneBy?: { toMillis(): number };
}
const requestsOf = async (uid: string): Promise<Stored[]> =>
  (await db().collection("deletionRequests").where("uid", "==", uid).get()).docs.map((d): Stored => {
    const x = d.data();
    return { id: d.id, tenantId: String(x.tenantId), state: String(x.state), groupId: x.groupId as string | undefined, scopedOnly: x.scopedOnly as boolean | undefined, fullyGoneBy: x.fullyGoneBy as Stored["fullyGoneBy"] };
  });
const run = (asOfMs: number, hook?: PurgeHook, owner = "group-suite") =>
  runNightlyPurge({ nowMs: asOfMs, asOfMs, dryRun: false, actor: { type: "system", id: "nightlyPurge" }, correlationId: owner, leaseMs: 60_000, batchSize: 2, owner, ...(hook ? { hook } : {}) });

function suiteRegistry(lookups: readonly ScopeLookup[]): void {
  beforeAll(() => useRegistryForTests(workspacesRegistry(lookups)));
  afterAll(() => useRegistryForTests(undefined));
}

describe("a user in two workspaces, erased by one request", () => {
  suiteRegistry([PATH_LOOKUP]);
  beforeAll(seed);

  let groupId: string;
  let holdId: string;
  let graceEndsAtMs: number;

  it("1. one call opens one request per workspace, together, as one group the user sees as one request", async () => {
    const opened = await requestAccountDeletionHandler({ reason: "leaving" }, ADA);
    groupId = opened.requestId;
    graceEndsAtMs = Date.parse(opened.graceEndsAt);
    expect(opened.state).toBe("PENDING");
    expect(opened.group?.groupId).toBe(groupId);
    expect(opened.group?.requests.map((r) => [r.scope, r.state, r.lead])).toEqual([
      ["w-a", "PENDING", true],
      ["w-b", "PENDING", false],
    ]);
    // Two stored requests, each an ordinary one, carrying the group's id; the one that is not the lead leaves the
    // uid-only entries (the profile) to it.
    const stored = await requestsOf("u-ada");
    expect(stored.map((r) => [r.tenantId, r.groupId, r.state, r.scopedOnly ?? false]).sort()).toEqual([
      ["w-a", groupId, "PENDING", false],
      ["w-b", groupId, "PENDING", true],
    ]);
    expect(stored.find((r) => r.tenantId === "w-a")!.id).toBe(groupId);
    // Everything of hers is soft-deleted, once, by the member of its workspace (her profile by the lead); Ben's is not.
    const lead = groupId;
    const other = stored.find((r) => r.id !== lead)!.id;
    for (const p of [...ADA_A, "people/u-ada"]) expect([p, await stateOf(p), (await db().doc(p).get()).get("deletionRequestId")]).toEqual([p, "SOFT_DELETED", lead]);
    for (const p of ADA_B) expect([p, await stateOf(p), (await db().doc(p).get()).get("deletionRequestId")]).toEqual([p, "SOFT_DELETED", other]);
    for (const p of BEN) expect(await stateOf(p)).toBe("ACTIVE");
    // The evidence names the group on each request's DELETION_REQUESTED.
    const requested = (await evidence()).filter((e) => e.action === "DELETION_REQUESTED");
    expect(requested.map((e) => [e.requestId, e.detail?.groupId, e.detail?.groupSize, e.detail?.scopedOnly]).sort()).toEqual(
      [
        [lead, groupId, 2, false],
        [other, groupId, 2, true],
      ].sort(),
    );
    // Asking again returns the same group.
    expect((await requestAccountDeletionHandler({}, ADA)).requestId).toBe(groupId);
  });

  it("2. status, with or without an id, and staff lists show the group", async () => {
    const mine = await getDeletionStatusHandler({}, ADA, { nowMs: Date.now(), refreshMs: 0 });
    expect(mine).toMatchObject({ requestId: groupId, state: "PENDING", graceEndsAt: new Date(graceEndsAtMs).toISOString(), fullyGoneByUnknown: "NOT_ERASED_YET" });
    expect(mine.group?.requests.map((r) => r.scope)).toEqual(["w-a", "w-b"]);
    expect(new Set(mine.timeline.map((t) => t.scope))).toEqual(new Set(["w-a", "w-b"]));
    expect(mine.staff).toBeUndefined();
    const other = mine.group!.requests[1]!.requestId;
    expect((await getDeletionStatusHandler({ requestId: other }, ADA, { nowMs: Date.now(), refreshMs: 0 })).requestId).toBe(groupId);
    const staff = await getDeletionStatusHandler({ requestId: other }, CLARA, { nowMs: Date.now(), refreshMs: 0 });
    expect(staff.staff?.subjectRef).toEqual({ type: "user", uid: "u-ada", scope: "w-a" });
    const listed = await listDeletionRequestsHandler({ subject: { type: "user", uid: "u-ada" } }, CLARA);
    const byScope = [...listed.items].sort((x, y) => (x.subject.tenantId < y.subject.tenantId ? -1 : 1));
    expect(byScope.map((i) => [i.subjectRef, i.group])).toEqual([
      [{ type: "user", uid: "u-ada", scope: "w-a" }, { groupId, lead: true }],
      [{ type: "user", uid: "u-ada", scope: "w-b" }, { groupId, lead: false }],
    ]);
    const inB = await listDeletionRequestsHandler({ subject: { type: "scope", id: "w-b" } }, CLARA);
    expect(inB.items.map((i) => i.requestId)).toEqual([other]);
    // The plan of the user by uid: both workspaces, the profile once, in the lead's part.
    const plan = await planDeletionHandler({ subject: { type: "user", uid: "u-ada" } }, CLARA);
    expect(plan.scopes?.map((s) => [s.scope, s.lead, s.delete])).toEqual([
      ["w-a", true, 3],
      ["w-b", false, 2],
    ]);
    expect(plan.delete).toEqual([...ADA_A, ...ADA_B, "people/u-ada"].sort());
    const inOne = await planDeletionHandler({ subject: { type: "user", uid: "u-ada", scope: "w-b" } }, CLARA);
    expect(inOne.delete).toEqual([...ADA_B].sort());
  });

  it("3. a hold on one workspace keeps that part and not the other; the account stays while a member keeps held data", async () => {
    ({ holdId } = await placeHold({ targetPath: "workspaces/w-a", reasonCode: "LITIGATION", releaseAfterMs: null, note: "dispute", actor: { type: "staff", id: "c-2001" }, nowMs: Date.now() }));
    const r1 = await run(graceEndsAtMs + DAY_MS);
    const outcomes = (r1.units as UnitReport[]).filter((u) => u.kind === "request").map((u) => u.outcome);
    expect(outcomes).toEqual(["DONE", "DONE"]);
    const stored = await requestsOf("u-ada");
    const a = stored.find((r) => r.tenantId === "w-a")!;
    const b = stored.find((r) => r.tenantId === "w-b")!;
    expect(a.state).toBe("RETAINED_UNDER_HOLD");
    expect(b.state).toBe("PURGED");
    for (const p of ADA_B) expect(await exists(p), p).toBe(false);
    for (const p of ADA_A) expect(await exists(p), p).toBe(true);
    // The lead erased her profile (no workspace: not under the hold); the other member never planned it.
    expect(await exists("people/u-ada")).toBe(false);
    const planned = async (requestId: string) => (await db().collection(`retentionJobs/purge-${requestId}/batches`).get()).docs.flatMap((d) => (d.get("items") as { path: string }[]).map((i) => i.path));
    expect(await planned(a.id)).toContain("people/u-ada");
    expect(await planned(b.id)).not.toContain("people/u-ada");
    expect((await planned(b.id)).sort()).toEqual([...ADA_B].sort());
    for (const p of BEN) expect(await exists(p), p).toBe(true);
    expect(await accountExists("u-ada")).toBe(true);
    expect((await evidence()).filter((e) => e.action.startsWith("AUTH_ACCOUNT"))).toEqual([]);
    const status = await getDeletionStatusHandler({ requestId: groupId }, ADA, { nowMs: graceEndsAtMs + DAY_MS, refreshMs: 0 });
    expect(status).toMatchObject({ state: "RETAINED_UNDER_HOLD", fullyGoneBy: null, fullyGoneByUnknown: "RETAINED_UNDER_HOLD" });
    expect(status.retained.map((r) => [r.path, r.reasonCode])).toEqual(expect.arrayContaining([[ADA_A[1], "LEGAL_OBLIGATION"]]));
  });

  it("4. after the release the held part is erased, the group ends PURGED and the Auth account goes exactly once", async () => {
    await releaseHoldById({ holdId, reason: "settled", actor: { type: "staff", id: "c-2002" }, nowMs: graceEndsAtMs + 2 * DAY_MS });
    await run(graceEndsAtMs + 3 * DAY_MS);
    for (const r of await requestsOf("u-ada")) expect(r.state).toBe("PURGED");
    for (const p of ADA_A) expect(await exists(p), p).toBe(false);
    for (const p of BEN) expect(await exists(p), p).toBe(true);
    expect(await accountExists("u-ada")).toBe(false);
    expect(await accountExists("u-ben")).toBe(true);
    // Another run changes nothing: the account is not deleted twice.
    await run(graceEndsAtMs + 4 * DAY_MS);
    const entries = await expectChainVerifies();
    const auth = entries.filter((e) => e.action.startsWith("AUTH_ACCOUNT"));
    expect(auth.map((e) => [e.action, e.requestId, e.decision.outcome ?? null])).toEqual([
      ["AUTH_ACCOUNT_DELETE_INTENT", groupId, null],
      ["AUTH_ACCOUNT_DELETED", groupId, "deleted"],
    ]);
    await expectDeletionsExplained(entries, [...ADA_A, ...ADA_B, "people/u-ada"]);
    const status = await getDeletionStatusHandler({ requestId: groupId }, CLARA, { nowMs: graceEndsAtMs + 4 * DAY_MS, refreshMs: 0 });
    expect(status.state).toBe("PURGED");
    const members = await requestsOf("u-ada");
    const latest = Math.max(...members.map((m) => m.fullyGoneBy!.toMillis()));
    expect(status.fullyGoneBy).toBe(new Date(latest).toISOString());
    // The erasure ledger has one entry per member; the member that is not the lead is recorded as such.
    const ids = new Set(members.map((m) => m.id));
    const ledger = (await readLedger()).filter((e) => ids.has(e.requestId));
    expect(ledger.map((e) => [e.requestId === groupId, e.scopedOnly ?? false]).sort()).toEqual([
      [false, true],
      [true, false],
    ]);
  });
});

describe("cancelling a request group in its grace period", () => {
  suiteRegistry([PATH_LOOKUP]);
  beforeEach(seed);

  it("restores both workspaces' data and the profile, whichever member's id is named", async () => {
    const opened = await requestAccountDeletionHandler({}, ADA);
    const other = opened.group!.requests[1]!.requestId;
    for (const p of [...ADA_A, ...ADA_B, "people/u-ada"]) expect(await stateOf(p)).toBe("SOFT_DELETED");
    expect(await cancelAccountDeletionHandler({ requestId: other }, ADA)).toEqual({ requestId: other, state: "CANCELLED" });
    for (const r of await requestsOf("u-ada")) expect(r.state).toBe("CANCELLED");
    for (const p of [...ADA_A, ...ADA_B, "people/u-ada"]) expect(await stateOf(p), p).toBe("ACTIVE");
    const status = await getDeletionStatusHandler({}, ADA, { nowMs: Date.now(), refreshMs: 0 });
    expect(status).toMatchObject({ requestId: opened.requestId, state: "CANCELLED", fullyGoneByUnknown: "CANCELLED" });
    // One cancel counts once towards the cooldown, not once per member; a refusal names it.
    await expect(requestAccountDeletionHandler({}, ADA)).rejects.toMatchObject({ reason: "REQUEST_COOLDOWN" });
    const entries = await expectChainVerifies();
    expect(entries.filter((e) => e.action === "DELETION_CANCEL_REQUESTED").map((e) => e.detail?.groupId)).toEqual([opened.requestId, opened.requestId]);
  });

  it("someone else cannot cancel it, and once a member is taken the whole group refuses", async () => {
    const opened = await requestAccountDeletionHandler({}, ADA);
    await expect(cancelAccountDeletionHandler({ requestId: opened.requestId }, { uid: "u-ben", tenantId: null, roles: [] })).rejects.toMatchObject({ reason: "NOT_OWNER" });
    // The purge takes one member (grace over): a cancel then refuses for the group, and nothing moves.
    const other = opened.group!.requests[1]!.requestId;
    await db().doc(`deletionRequests/${other}`).update({ state: "PROCESSING" });
    await expect(cancelAccountDeletionHandler({ requestId: opened.requestId }, ADA)).rejects.toMatchObject({ reason: "ALREADY_PROCESSING" });
    expect((await requestsOf("u-ada")).map((r) => r.state).sort()).toEqual(["PENDING", "PROCESSING"]);
    for (const p of [...ADA_A, ...ADA_B]) expect(await stateOf(p)).toBe("SOFT_DELETED");
  });
});

describe("a request group under real concurrency", () => {
  suiteRegistry([MEMBERSHIP_LOOKUP]);
  beforeEach(async () => {
    await seed();
    // The membership lookup: top-level memberships naming the workspace (the path lookup is not in this registry).
    for (const [id, w] of [["ms-1", "w-a"], ["ms-2", "w-b"]] as const) {
      const cls = policy().classForPath(`memberships/${id}`)!;
      await db()
        .doc(`memberships/${id}`)
        .set({
          uid: "u-ada",
          workspaceId: w,
          ...governedToFirestore({ retentionClass: cls.id, lifecycleState: "ACTIVE", tenantId: w, policyVersion: policy().version, createdAtMs: CREATED, expireAtMs: null, retainUntilMs: null, legalHold: false, holdIds: [], preHold: null }, "set"),
        });
    }
  });

  it("two calls at once open one group, not two", async () => {
    const [a, b] = await Promise.all([requestAccountDeletionHandler({}, ADA), requestAccountDeletionHandler({}, ADA)]);
    expect(a.requestId).toBe(b.requestId);
    const stored = await requestsOf("u-ada");
    expect(stored).toHaveLength(2);
    expect(new Set(stored.map((r) => r.groupId))).toEqual(new Set([a.requestId]));
    expect((await evidence()).filter((e) => e.action === "DELETION_REQUESTED")).toHaveLength(2);
  });

  it("two members finishing at once, in two runners, delete the account exactly once", async () => {
    const opened = await requestAccountDeletionHandler({}, ADA);
    const asOf = Date.parse(opened.graceEndsAt) + DAY_MS;
    // Each runner holds its member at the door of its finalize until both are there: the two final transactions run together.
    const atDoor = new Set<string>();
    const barrier: PurgeHook = async (ctx) => {
      if (ctx.point !== "beforeFinalize") return;
      atDoor.add(ctx.unitKey);
      const until = Date.now() + 20_000;
      while (atDoor.size < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 25));
    };
    const ids = opened.group!.requests.map((r) => r.requestId);
    const [r1, r2] = await Promise.all([
      runNightlyPurge({ nowMs: asOf, asOfMs: asOf, dryRun: false, actor: { type: "system", id: "nightlyPurge" }, correlationId: "r1", leaseMs: 60_000, batchSize: 2, owner: "runner-1", hook: barrier, requestIds: [ids[0]!], sweep: false }),
      runNightlyPurge({ nowMs: asOf, asOfMs: asOf, dryRun: false, actor: { type: "system", id: "nightlyPurge" }, correlationId: "r2", leaseMs: 60_000, batchSize: 2, owner: "runner-2", hook: barrier, requestIds: [ids[1]!], sweep: false }),
    ]);
    expect(atDoor.size).toBe(2);
    expect([...(r1.units as UnitReport[]), ...(r2.units as UnitReport[])].map((u) => u.outcome)).toEqual(["DONE", "DONE"]);
    for (const r of await requestsOf("u-ada")) expect(r.state).toBe("PURGED");
    expect(await accountExists("u-ada")).toBe(false);
    const entries = await expectChainVerifies();
    expect(entries.filter((e) => e.action === "AUTH_ACCOUNT_DELETE_INTENT")).toHaveLength(1);
    expect(entries.filter((e) => e.action === "AUTH_ACCOUNT_DELETED").map((e) => e.decision.outcome)).toEqual(["deleted"]);
    for (const p of ["memberships/ms-1", "memberships/ms-2", ...ADA_A, ...ADA_B, "people/u-ada"]) expect(await exists(p), p).toBe(false);
  });

  it(`a user in more than ${GROUP_MAX_SCOPES} workspaces is refused, and nothing is opened`, async () => {
    const batch = db().batch();
    for (let i = 0; i < GROUP_MAX_SCOPES; i++) batch.set(db().doc(`memberships/ms-x${i}`), { uid: "u-ada", workspaceId: `w-x${String(i).padStart(2, "0")}` });
    await batch.commit();
    await expect(requestAccountDeletionHandler({}, ADA)).rejects.toMatchObject({ reason: "TOO_MANY_SCOPES", details: { limit: GROUP_MAX_SCOPES } });
    expect(await requestsOf("u-ada")).toEqual([]);
    for (const p of [...ADA_A, ...ADA_B, "people/u-ada"]) expect(await stateOf(p)).toBe("ACTIVE");
  });
});

describe("a workspace's closure finds its accounts through the registry's lookups", () => {
  suiteRegistry([PATH_LOOKUP]);
  beforeAll(async () => {
    await seed();
    // Cy is in w-b alone; her member document's id is not her uid, so only the path lookup names her.
    const pol = policy();
    const cls = pol.classForPath("workspaces/w-b/members/m-4")!;
    await db()
      .doc("workspaces/w-b/members/m-4")
      .set({ uid: "u-cy", ...governedToFirestore({ retentionClass: cls.id, lifecycleState: "ACTIVE", tenantId: "w-b", policyVersion: pol.version, createdAtMs: CREATED, expireAtMs: null, retainUntilMs: null, legalHold: false, holdIds: [], preHold: null }, "set") });
    await getAuth(adminApp()).createUser({ uid: "u-cy" });
  });

  it("closing w-b deletes the account of its only-member user and keeps Ada's, whom the lookup places in w-a too", async () => {
    const RITA: Caller = { uid: "r-3001", tenantId: null, roles: ["retention-admin"] };
    const asked = await requestTenantDeletionHandler({ subject: { type: "scope", id: "w-b" }, reason: "workspace deleted" }, RITA);
    const approved = await approveTenantDeletionHandler({ requestId: asked.requestId }, CLARA);
    const asOf = Date.parse(approved.graceEndsAt!) + DAY_MS;
    await run(asOf);
    expect((await db().doc(`deletionRequests/${asked.requestId}`).get()).get("state")).toBe("PURGED");
    for (const p of ["workspaces/w-b", ...ADA_B, "workspaces/w-b/members/m-4"]) expect(await exists(p), p).toBe(false);
    expect(await accountExists("u-cy")).toBe(false);
    expect(await accountExists("u-ada")).toBe(true);
    expect(await accountExists("u-ben")).toBe(true);
    const accounts = (await expectChainVerifies()).find((e) => e.action === "AUTH_ACCOUNTS_DELETED")!;
    expect(accounts.counts).toEqual({ deleted: 1, alreadyAbsent: 0, keptOtherTenant: 1 });
    expect(accounts.paths).toEqual(["workspaces/w-a/members/m-1"]);
    // The users it judged were recorded before its round deleted the memberships that name them (Cy's member
    // document is gone, and her uid was in no path), and the roster is not kept once they are judged.
    expect((await db().collection(`deletionRequests/${asked.requestId}/scopeUsers`).get()).empty).toBe(true);
  });
});
