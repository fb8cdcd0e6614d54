// Retention fields are server-only: no client sets or changes them, on create or update, whatever its role.
// The one client write (a user renaming themself) is allowed only while it touches displayName alone.
import { readFileSync } from "node:fs";
import { assertFails, assertSucceeds } from "@firebase/rules-unit-testing";
import { Timestamp, deleteField, doc, setDoc, updateDoc, type DocumentData } from "firebase/firestore";
import { describe, expect, it } from "vitest";
import { PROTECTED_FIELDS } from "../../functions/src/kernel/governed";
import { IDENTITIES, RULES_FILE, ROLES, clientAs, governedDocs, readRaw, seed, useRulesEnv, type Role } from "../helpers/rules";

type ProtectedField = (typeof PROTECTED_FIELDS)[number];
const DAY_MS = 86_400_000;
const inDays = (days: number) => Timestamp.fromMillis(Date.now() + days * DAY_MS);

/** For each protected field, a value that differs from what the profile fixture holds. */
const FORGED: Readonly<Record<ProtectedField, unknown>> = {
  retentionClass: "session-30d",
  lifecycleState: "LEGAL_HOLD",
  tenantId: "t-other",
  policyVersion: "v2",
  createdAt: inDays(0),
  expireAt: inDays(3650),
  retainUntil: inDays(3650),
  legalHold: true,
  holdIds: ["h-forged"],
  preHold: { lifecycleState: "ACTIVE", expireAt: null },
  softDeletedAt: inDays(0),
  preDeleteState: "ACTIVE",
  deletionRequestId: "dr-forged",
  purgeDecision: { reason: "AUTHORIZED_BY_POLICY" },
  maskedAt: inDays(0),
};

const PROFILE = "tenants/t-acme/users/u-1001";

describe("the rules mirror PROTECTED_FIELDS", () => {
  it("protectedFields() in firestore.rules lists exactly kernel/governed.ts PROTECTED_FIELDS", () => {
    const rules = readFileSync(RULES_FILE, "utf8");
    const body = /function protectedFields\(\)\s*\{\s*return\s*\[([^\]]*)\]/.exec(rules)?.[1];
    expect(body, "firestore.rules defines protectedFields()").toBeDefined();
    const listed = [...(body ?? "").matchAll(/'([^']+)'/g)].map((m) => m[1]);
    expect([...listed].sort()).toEqual([...PROTECTED_FIELDS].sort());
  });
});

describe("a user updating their own profile", () => {
  const env = useRulesEnv();
  const owner = () => clientAs(env(), "owner");

  it("owner | users | update displayName only | allow", async () => {
    await assertSucceeds(updateDoc(doc(owner(), PROFILE), { displayName: "Ada King" }));
    const after = await readRaw(env(), PROFILE);
    expect(after).toMatchObject({ displayName: "Ada King", lifecycleState: "ACTIVE", retentionClass: "user-delete", policyVersion: "v1" });
  });

  it.each(PROTECTED_FIELDS.map((f) => [f]))("owner | users | update displayName and set %s | deny", async (field) => {
    const before = await readRaw(env(), PROFILE);
    expect(before?.[field]).not.toEqual(FORGED[field]);
    await assertFails(updateDoc(doc(owner(), PROFILE), { displayName: "Ada King", [field]: FORGED[field] }));
    expect(await readRaw(env(), PROFILE)).toEqual(before);
  });

  it("owner | users | update displayName while setting lifecycleState, expireAt, legalHold, policyVersion, retentionClass | deny", async () => {
    await assertFails(
      updateDoc(doc(owner(), PROFILE), {
        displayName: "Ada King",
        lifecycleState: FORGED.lifecycleState,
        expireAt: FORGED.expireAt,
        legalHold: FORGED.legalHold,
        policyVersion: FORGED.policyVersion,
        retentionClass: FORGED.retentionClass,
      }),
    );
    expect((await readRaw(env(), PROFILE))?.displayName).toBe("Ada Lovelace");
  });

  // Removing a retention field is a change too (e.g. dropping lifecycleState or the TTL anchor).
  it.each(["retentionClass", "lifecycleState", "tenantId", "policyVersion", "createdAt", "legalHold", "holdIds"].map((f) => [f]))(
    "owner | users | update displayName and remove %s | deny",
    async (field) => {
      expect((await readRaw(env(), PROFILE))?.[field]).toBeDefined();
      await assertFails(updateDoc(doc(owner(), PROFILE), { displayName: "Ada King", [field]: deleteField() }));
    },
  );

  it("owner | users | whole-document rewrite keeping only business fields | deny", async () => {
    await assertFails(setDoc(doc(owner(), PROFILE), { uid: "u-1001", displayName: "Ada King" }));
  });

  it("owner | users | rewrite with every field kept and a new displayName | allow", async () => {
    const before = await readRaw(env(), PROFILE);
    await assertSucceeds(setDoc(doc(owner(), PROFILE), { ...before, displayName: "Ada King" }));
    expect(await readRaw(env(), PROFILE)).toEqual({ ...before, displayName: "Ada King" });
  });

  it.each([
    ["an empty displayName", ""],
    ["a 101-character displayName", "x".repeat(101)],
    ["a non-string displayName", 42],
    ["a null displayName", null],
  ] as const)("owner | users | update with %s | deny", async (_what, value) => {
    await assertFails(updateDoc(doc(owner(), PROFILE), { displayName: value }));
  });

  it.each([
    ["a 1-character displayName", "A"],
    ["a 100-character displayName", "y".repeat(100)],
  ] as const)("owner | users | update with %s | allow", async (_what, value) => {
    await assertSucceeds(updateDoc(doc(owner(), PROFILE), { displayName: value }));
  });

  it("owner | users | update displayName plus a new business field | deny", async () => {
    await assertFails(updateDoc(doc(owner(), PROFILE), { displayName: "Ada King", email: "ada@example.test" }));
  });

  it("owner | users | remove displayName | deny", async () => {
    await assertFails(updateDoc(doc(owner(), PROFILE), { displayName: deleteField() }));
  });

  it("peer | users | rename own profile | allow; rename the owner | deny", async () => {
    const peer = clientAs(env(), "peer");
    await assertSucceeds(updateDoc(doc(peer, "tenants/t-acme/users/u-1002"), { displayName: "Ben O." }));
    await assertFails(updateDoc(doc(peer, PROFILE), { displayName: "Ben was here" }));
  });

  it("owner | users | rename own SOFT_DELETED profile | deny", async () => {
    await seed(env(), [{ path: PROFILE, data: { lifecycleState: "SOFT_DELETED", softDeletedAt: inDays(0), preDeleteState: "ACTIVE" } }], { merge: true });
    await assertFails(updateDoc(doc(owner(), PROFILE), { displayName: "Ada King" }));
  });

  it("owner | users | create own profile again under another tenant with retention fields | deny", async () => {
    const forged = governedDocs([{ path: "tenants/t-other/users/u-1001", tenantId: "t-other", data: { uid: "u-1001", displayName: "Ada" } }], Date.now())[0]!;
    await assertFails(setDoc(doc(owner(), forged.path), forged.data));
  });
});

describe("retention fields on other documents, for every role", () => {
  const env = useRulesEnv();

  // An audit record's class downgraded from 7-year audit retention to a 30-day session would let TTL take it.
  it.each(ROLES.map((r) => [IDENTITIES[r].label, r] as const))(
    "%s | auditRecords/ar-001 | update retentionClass audit-7y -> session-30d | deny",
    async (_label, role: Role) => {
      expect((await readRaw(env(), "auditRecords/ar-001"))?.retentionClass).toBe("audit-7y");
      await assertFails(updateDoc(doc(clientAs(env(), role), "auditRecords/ar-001"), { retentionClass: "session-30d" }));
      expect((await readRaw(env(), "auditRecords/ar-001"))?.retentionClass).toBe("audit-7y");
    },
  );

  const attempts: readonly { who: Role; what: string; path: string; change: DocumentData; before?: DocumentData }[] = [
    { who: "owner", what: "extend own session expireAt by ten years", path: "sessions/s-1001", change: { expireAt: inDays(3650) } },
    { who: "owner", what: "clear own session expireAt", path: "sessions/s-1001", change: { expireAt: deleteField() } },
    {
      who: "owner",
      what: "lift the hold on own order",
      path: "tenants/t-acme/orders/o-1002",
      before: { lifecycleState: "LEGAL_HOLD", legalHold: true, holdIds: ["h-001"] },
      change: { lifecycleState: "ACTIVE", legalHold: false, holdIds: [] },
    },
    { who: "owner", what: "set legalHold on own order", path: "tenants/t-acme/orders/o-1001", change: { legalHold: true } },
    { who: "owner", what: "move own directory entry to policy v2", path: "userDirectory/u-1001", change: { policyVersion: "v2" } },
    { who: "owner", what: "soft-delete own activity", path: "activity/a-001", change: { lifecycleState: "SOFT_DELETED" } },
    { who: "compliance", what: "place a hold by writing legalHold", path: "tenants/t-acme/orders/o-1002", change: { legalHold: true, holdIds: ["h-direct"] } },
    { who: "compliance", what: "change an audit record's expireAt", path: "auditRecords/ar-001", change: { expireAt: inDays(1) } },
    { who: "retentionAdmin", what: "transition a profile by writing lifecycleState", path: PROFILE, change: { lifecycleState: "SOFT_DELETED" } },
    { who: "retentionAdmin", what: "mark an order PURGE_ELIGIBLE", path: "tenants/t-acme/orders/o-1001", change: { lifecycleState: "PURGE_ELIGIBLE" } },
    { who: "retentionAdmin", what: "expire an event now", path: "events/e-001", change: { expireAt: inDays(-1) } },
  ];
  it.each(attempts.map((a) => [`${IDENTITIES[a.who].label} | ${a.path} | ${a.what}`, a] as const))("%s | deny", async (_name, a) => {
    if (a.before) await seed(env(), [{ path: a.path, data: a.before }], { merge: true });
    const before = await readRaw(env(), a.path);
    await assertFails(updateDoc(doc(clientAs(env(), a.who), a.path), a.change));
    expect(await readRaw(env(), a.path)).toEqual(before);
  });

  // Creates with retention fields: a client minting a long-lived or held document of its own.
  const creates: readonly { who: Role; path: string; tenantId: string; data: DocumentData; extra: DocumentData }[] = [
    { who: "owner", path: "sessions/s-forged", tenantId: "t-acme", data: { uid: "u-1001" }, extra: { expireAt: inDays(3650), legalHold: true } },
    { who: "owner", path: "activity/a-forged", tenantId: "t-acme", data: { subjectUid: "u-1001", type: "SIGNED_IN" }, extra: {} },
    { who: "compliance", path: "auditRecords/ar-forged", tenantId: "t-acme", data: { action: "NOTE", actorUid: "c-2001" }, extra: {} },
    { who: "retentionAdmin", path: "events/e-forged", tenantId: "t-acme", data: { type: "PAGE_VIEW" }, extra: { retentionClass: "audit-7y" } },
  ];
  it.each(creates.map((c) => [`${IDENTITIES[c.who].label} | ${c.path} | create with retention fields`, c] as const))(
    "%s | deny",
    async (_name, c) => {
      const data = { ...governedDocs([{ path: c.path, tenantId: c.tenantId, data: c.data }], Date.now())[0]!.data, ...c.extra };
      expect(data.retentionClass).toBeDefined();
      await assertFails(setDoc(doc(clientAs(env(), c.who), c.path), data));
      expect(await readRaw(env(), c.path)).toBeUndefined();
    },
  );
});
