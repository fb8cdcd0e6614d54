/**
 * Legal clocks on a request group, in-process on the emulator (docs/decisions/0040-legal-clocks-and-access.md): a user
 * in two workspaces, one of them in California, opens one request per workspace; each member runs on its own law's
 * clock, the group on its member due first, and one extension extends every member within its own law's limit.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { extendRequestDeadlineHandler } from "../../../functions/src/entrypoints/callable/extend-request-deadline";
import { getDeletionStatusHandler } from "../../../functions/src/entrypoints/callable/get-deletion-status";
import { requestAccountDeletionHandler } from "../../../functions/src/entrypoints/callable/request-account-deletion";
import type { Caller } from "../../../functions/src/entrypoints/callable/shared";
import { useRegistryForTests } from "../../../functions/src/platform/registry";
import { settings } from "../../../functions/src/platform/settings";
import { addPeriod } from "../../../functions/src/requests/rules/legal-clock";
import { PATH_LOOKUP, WORKSPACES_DATABASE, workspacesRegistry } from "../../fixtures/workspaces/registry";
import { putWorkspaceDoc } from "../../fixtures/workspaces/seed";
import { clearFirestore, db } from "../../helpers/emulator";
import { useDatabase } from "../purge/support";
import { refusal } from "../../helpers/refusal";

useDatabase(WORKSPACES_DATABASE);

const DAY = 86_400_000;
const CLARA: Caller = { uid: "c-2001", tenantId: null, roles: ["compliance"] };
const REASON = "The request spans three years of orders and two archive systems.";
const iso = (ms: number) => new Date(ms).toISOString();

/** Ada, a member of workspaces w-a (GDPR) and w-b (California: the CCPA), asks for erasure: a group of two requests. */
async function adaInTwoWorkspaces() {
  await clearFirestore(settings.databaseId());
  await putWorkspaceDoc("workspaces/w-a/members/m-1", "w-a", { uid: "u-ada" });
  await putWorkspaceDoc("workspaces/w-b/members/m-2", "w-b", { uid: "u-ada" });
  await putWorkspaceDoc("people/u-ada", "", { displayName: "Ada" });
  return requestAccountDeletionHandler({}, { uid: "u-ada", tenantId: null, roles: [] });
}

/** A group's members as stored, by scope. */
async function membersOf(groupId: string): Promise<Map<string, Record<string, unknown>>> {
  const snap = await db().collection("deletionRequests").where("groupId", "==", groupId).get();
  return new Map(snap.docs.map((d) => [d.get("tenantId") as string, d.data() as Record<string, unknown>]));
}

describe("legal clocks on a request group", () => {
  const ADA: Caller = { uid: "u-ada", tenantId: null, roles: [] };
  // Workspace w-b is in California: Ada's member request there runs on the CCPA's clock, w-a's on the GDPR's.
  beforeAll(() => useRegistryForTests(workspacesRegistry([PATH_LOOKUP], { clocks: true })));
  afterAll(() => useRegistryForTests(undefined));

  it("each member carries its own law's deadline, the group its earliest; one extension extends every member within its own limit", async () => {
    const opened = await adaInTwoWorkspaces();
    expect(opened.group?.requests).toHaveLength(2);
    const members = (await db().collection("deletionRequests").where("groupId", "==", opened.requestId).get()).docs.map((d) => d.data());
    const byScope = new Map(members.map((m) => [m.tenantId as string, m]));
    const lawOf = (m: Record<string, unknown>) => (m.legalClock as { law: string }).law;
    expect(lawOf(byScope.get("w-a")!)).toBe("gdpr");
    expect(lawOf(byScope.get("w-b")!)).toBe("ccpa");
    const dueOf = (m: Record<string, unknown>) => (m.dueAt as { toMillis(): number }).toMillis();
    const earliest = Math.min(...members.map(dueOf));
    const status = await getDeletionStatusHandler({ requestId: opened.requestId }, ADA, { nowMs: Date.now(), refreshMs: settings.statusRefreshMs() });
    expect(status.dueAt).toBe(iso(earliest));
    expect(status.legalClock!.dueAt).toBe(iso(earliest));

    const out = await extendRequestDeadlineHandler({ requestId: opened.requestId, reason: REASON }, CLARA);
    expect(out.extended.map((e) => e.law).sort()).toEqual(["ccpa", "gdpr"]);
    const extended = new Map((await db().collection("deletionRequests").where("groupId", "==", opened.requestId).get()).docs.map((d) => [d.get("tenantId") as string, d.data()]));
    expect(dueOf(extended.get("w-a")!)).toBe(addPeriod(dueOf(byScope.get("w-a")!), { months: 2 }));
    expect(dueOf(extended.get("w-b")!)).toBe(dueOf(byScope.get("w-b")!) + 45 * DAY);
    expect(await refusal(extendRequestDeadlineHandler({ requestId: opened.requestId, reason: REASON }, CLARA))).toBe("failed-precondition/ALREADY_EXTENDED");
  });

  it("a member already answered keeps its answer: the extension extends the members still owed one, read by the group's id", async () => {
    const opened = await adaInTwoWorkspaces();
    const before = await membersOf(opened.requestId);
    // The CCPA member (w-b) was answered: erased.
    const answered = before.get("w-b")!;
    await db().doc(`deletionRequests/${answered.requestId as string}`).update({ state: "PURGED", timeline: [{ at: new Date(), event: "PURGED", detail: "test" }] });
    // Through either member: here the answered one, which names the group.
    const out = await extendRequestDeadlineHandler({ requestId: answered.requestId as string, reason: REASON }, CLARA);
    expect(out.extended.map((e) => [e.requestId, e.law])).toEqual([[before.get("w-a")!.requestId, "gdpr"]]);
    const after = await membersOf(opened.requestId);
    const dueOf = (m: Record<string, unknown>) => (m.dueAt as { toMillis(): number }).toMillis();
    expect(dueOf(after.get("w-a")!)).toBe(addPeriod(dueOf(before.get("w-a")!), { months: 2 }));
    expect(after.get("w-b")!.dueAt).toEqual(answered.dueAt);
    expect((after.get("w-b")!.legalClock as { extension: unknown }).extension).toBeNull();
    expect(after.get("w-b")!.state).toBe("PURGED");
    const entries = (await db().collection("deletionAudits").where("action", "==", "DEADLINE_EXTENDED").get()).docs.map((d) => d.data());
    expect(entries.map((e) => [e.requestId as string, (e.detail as { law: string }).law])).toEqual([[before.get("w-a")!.requestId, "gdpr"]]);
    // Every member answered: refused, nothing written.
    await db().doc(`deletionRequests/${before.get("w-a")!.requestId as string}`).update({ state: "PURGED" });
    const settled = await membersOf(opened.requestId);
    expect(await refusal(extendRequestDeadlineHandler({ requestId: opened.requestId, reason: REASON }, CLARA))).toBe("failed-precondition/NOT_EXTENDABLE");
    expect(await membersOf(opened.requestId)).toEqual(settled);
  });
});
