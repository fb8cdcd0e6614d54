/**
 * A request group over HTTP, on AtlasMart's own registry (v5). A customer's own request is decided by the tenant
 * claim on their token, so it never spans tenants; but a customer whose account is deleted outside the workflow
 * (the Auth backstop) with no tenant claim and no directory entry is found by the registry's path lookup in every
 * tenant they have a profile in, and one request group opens. Staff then see it through the callables, which also
 * take a subject in the general form beside the documented AtlasMart inputs, and those keep their answers.
 */
import { getAuth } from "firebase-admin/auth";
import { beforeAll, describe, expect, it } from "vitest";
import type { CallableOutput } from "../../../../functions/src/contract";
import { freshGovernedFields } from "../../../../functions/src/kernel/governed-write";
import { governedToFirestore } from "../../../../functions/src/platform/governed-doc";
import { policy } from "../../../../functions/src/platform/registry";
import { adminApp, call, db, waitFor } from "../../../helpers/emulator";
import { callExpect, docData, expectRefused, freshDemo, type Tokens } from "./support";

const CY = "u-1003";

async function putGoverned(path: string, tenantId: string, data: Record<string, unknown>): Promise<void> {
  const pol = policy();
  const cls = pol.classForPath(path)!;
  const now = Date.now();
  await db()
    .doc(path)
    .set({
      ...data,
      ...governedToFirestore(
        freshGovernedFields(cls, { tenantId, policyVersion: pol.version, createdAtMs: now, expireAtMs: null }),
        "set",
      ),
    });
}

describe("a request group through the callables (AtlasMart's registry)", () => {
  let tokens: Tokens;
  let groupId: string;

  beforeAll(async () => {
    tokens = await freshDemo();
    // Cy has a profile in t-acme and in t-globex, no tenant claim and no directory entry.
    await putGoverned("tenants/t-globex", "t-globex", { name: "Globex" });
    await putGoverned(`tenants/t-acme/users/${CY}`, "t-acme", { uid: CY, displayName: "Cy" });
    await putGoverned(`tenants/t-globex/users/${CY}`, "t-globex", { uid: CY, displayName: "Cy" });
    await getAuth(adminApp()).createUser({ uid: CY });
  });

  it("the Auth backstop opens one request per tenant, together, as one group", async () => {
    await getAuth(adminApp()).deleteUser(CY);
    const docs = await waitFor(async () => {
      const snap = await db().collection("deletionRequests").where("uid", "==", CY).get();
      return snap.size === 2 ? [...snap.docs] : null;
    }, "the backstop's request group");
    const byTenant = new Map(docs.map((d) => [d.get("tenantId") as string, d]));
    groupId = byTenant.get("t-acme")!.id;
    const row = (d: (typeof docs)[number]): unknown[] => [d.get("tenantId"), d.get("groupId"), d.get("source"), d.get("scopedOnly") ?? false];
    expect(docs.map(row).sort()).toEqual([
      ["t-acme", groupId, "auth-backstop", false],
      ["t-globex", groupId, "auth-backstop", true],
    ]);
    await waitFor(async () => (await docData(`tenants/t-globex/users/${CY}`)).lifecycleState === "SOFT_DELETED", "the group's soft delete");
  });

  it("getDeletionStatus answers for the whole group, whichever member's id, under the group's id", async () => {
    const members = (await db().collection("deletionRequests").where("groupId", "==", groupId).get()).docs.map((d) => d.id);
    for (const requestId of members) {
      const s = await callExpect<CallableOutput<"getDeletionStatus">>("getDeletionStatus", { requestId }, tokens.clara);
      expect(s.requestId).toBe(groupId);
      expect(s.state).toBe("PENDING");
      expect(s.group?.requests.map((r) => [r.scope, r.lead])).toEqual([
        ["t-acme", true],
        ["t-globex", false],
      ]);
      expect(s.staff?.subject).toMatchObject({ type: "user", uid: CY, tenantId: "t-acme" });
      expect(s.staff?.subjectRef).toEqual({ type: "user", uid: CY, scope: "t-acme" });
    }
  });

  it("lists filter by a subject in the general form, and name each request's group", async () => {
    const mine = await callExpect<CallableOutput<"listDeletionRequests">>("listDeletionRequests", { subject: { type: "user", uid: CY } }, tokens.clara);
    expect(mine.items.map((i) => [i.subjectRef, i.group?.groupId, i.group?.lead]).sort()).toEqual(
      [
        [{ type: "user", uid: CY, scope: "t-acme" }, groupId, true],
        [{ type: "user", uid: CY, scope: "t-globex" }, groupId, false],
      ].sort(),
    );
    const globex = await callExpect<CallableOutput<"listDeletionRequests">>("listDeletionRequests", { subject: { type: "scope", id: "t-globex" } }, tokens.clara);
    expect(globex.items.map((i) => i.subject)).toEqual([{ type: "user", uid: CY, tenantId: "t-globex" }]);
    expectRefused(await call("listDeletionRequests", { subject: { type: "scope", id: "t-globex" }, state: "PENDING" }, tokens.clara), "INVALID_ARGUMENT", "INVALID_ARGUMENT");
  });

  it("planDeletion and explainDeletion take the general form; the documented inputs answer as before", async () => {
    const all = await callExpect<CallableOutput<"planDeletion">>("planDeletion", { subject: { type: "user", uid: CY } }, tokens.clara);
    expect(all.subjectRef).toEqual({ type: "user", uid: CY, scope: null });
    expect(all.scopes?.map((s) => [s.scope, s.lead])).toEqual([
      ["t-acme", true],
      ["t-globex", false],
    ]);
    expect(all.delete).toEqual(expect.arrayContaining([`tenants/t-acme/users/${CY}`, `tenants/t-globex/users/${CY}`]));
    const one = await callExpect<CallableOutput<"planDeletion">>("planDeletion", { subject: { type: "user", uid: CY, scope: "t-globex" } }, tokens.clara);
    expect(one.delete).toEqual([`tenants/t-globex/users/${CY}`]);
    expect(one.scopes).toBeUndefined();
    // AtlasMart's documented inputs: one tenant (the claim decides), no `scopes`; the same as the general form.
    const ada = await callExpect<CallableOutput<"planDeletion">>("planDeletion", { subjectUid: "u-1001" }, tokens.clara);
    expect(ada.subjectRef).toEqual({ type: "user", uid: "u-1001", scope: "t-acme" });
    expect(ada.scopes).toBeUndefined();
    const adaGeneral = await callExpect<CallableOutput<"planDeletion">>("planDeletion", { subject: { type: "user", uid: "u-1001" } }, tokens.clara);
    expect(adaGeneral.manifestHash).toBe(ada.manifestHash);
    const tenant = await callExpect<CallableOutput<"planDeletion">>("planDeletion", { tenantId: "t-acme" }, tokens.clara);
    expect((await callExpect<CallableOutput<"planDeletion">>("planDeletion", { subject: { type: "scope", id: "t-acme" } }, tokens.clara)).manifestHash).toBe(tenant.manifestHash);
    expect(tenant.subjectRef).toEqual({ type: "scope", id: "t-acme" });

    const explained = await callExpect<CallableOutput<"explainDeletion">>("explainDeletion", { subject: { type: "user", uid: CY } }, tokens.clara);
    const opened = explained.entries.filter((e) => e.action === "BACKSTOP_REQUEST_OPENED");
    expect(opened.map((e) => [e.detail.tenantId, e.detail.groupId, e.detail.groupSize]).sort()).toEqual([
      ["t-acme", groupId, 2],
      ["t-globex", groupId, 2],
    ]);
    const globexMember = (await db().collection("deletionRequests").where("groupId", "==", groupId).where("tenantId", "==", "t-globex").get()).docs[0]!.id;
    const inGlobex = await callExpect<CallableOutput<"explainDeletion">>("explainDeletion", { subject: { type: "user", uid: CY, scope: "t-globex" } }, tokens.clara);
    const matched = inGlobex.entries.filter((e) => e.role === "match");
    expect(matched.length).toBeGreaterThan(0);
    expect(new Set(matched.map((e) => e.requestId))).toEqual(new Set([globexMember]));
  });

  it("requestTenantDeletion takes the scope in the general form; a user's own request answers as documented", async () => {
    const closure = await callExpect<CallableOutput<"requestTenantDeletion">>("requestTenantDeletion", { subject: { type: "scope", id: "t-globex" }, reason: "contract ended" }, tokens.rita);
    expect(closure).toMatchObject({ state: "AWAITING_APPROVAL", created: true, graceEndsAt: null });
    expect((await callExpect<CallableOutput<"requestTenantDeletion">>("requestTenantDeletion", { tenantId: "t-globex", reason: "again" }, tokens.rita)).requestId).toBe(closure.requestId);
    expectRefused(await call("requestTenantDeletion", { subject: { type: "user", uid: CY }, reason: "no" }, tokens.rita), "INVALID_ARGUMENT", "INVALID_ARGUMENT");
    const own = await callExpect<Record<string, unknown>>("requestAccountDeletion", { reason: "bye" }, tokens.ada);
    expect(Object.keys(own).sort()).toEqual(["graceEndsAt", "requestId", "state"]);
    const status = await callExpect<Record<string, unknown>>("getDeletionStatus", {}, tokens.ada);
    expect(status.group).toBeUndefined();
    expect(status.staff).toBeUndefined();
  });
});
