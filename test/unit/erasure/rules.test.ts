import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  storageSubjectSegments,
  buildLedgerEntry,
  entryConflicts,
  goneByUpdate,
  ledgerEntryId,
  matchLedger,
  maskedByCollection,
  subjectOfFound,
  subjectSources,
  wildcardCollection,
  type LedgerEntry,
} from "../../../functions/src/erasure/rules";
import type { Subject } from "../../../functions/src/plan/rules";
import { policyV1 } from "../../helpers/policy";

const keyed = (key: string) => (id: string) => createHmac("sha256", key).update(id).digest("hex");
const K1 = keyed("k1");
const K2 = keyed("k2");
const pol = policyV1();
const patternOf = (p: string) => pol.ruleForPath(p)?.pattern ?? null;

const ada: Subject = { type: "user", uid: "u-1001", tenantId: "t-acme" };
const acme: Subject = { type: "tenant", tenantId: "t-acme" };

function entry(subject: Subject, requestId: string, erasedAtMs = 1_000, hash = K1): LedgerEntry {
  return buildLedgerEntry({ requestId, subject, policyVersion: "v1", erasedAtMs, masked: [] }, hash, patternOf);
}

describe("ledger entries", () => {
  it("hold keyed hashes, collection patterns and field names: no id, no value", () => {
    const e = buildLedgerEntry(
      {
        requestId: "req-1",
        subject: ada,
        policyVersion: "v1",
        erasedAtMs: 42,
        masked: [
          { path: "tenants/t-acme/orders/o-2", fields: ["shippingAddress", "customerName"] },
          { path: "tenants/t-acme/orders/o-1", fields: ["customerName"] },
          { path: "unknownThings/u-1001", fields: ["note"] },
        ],
      },
      K1,
      patternOf,
    );
    expect(e).toEqual({
      requestId: "req-1",
      subjectKind: "user",
      subjectHash: K1("u-1001"),
      tenantHash: K1("t-acme"),
      policyVersion: "v1",
      erasedAtMs: 42,
      masked: [
        { collection: "tenants/{tenantId}/orders", fields: ["customerName", "shippingAddress"], count: 2 },
        { collection: "unknownThings", fields: ["note"], count: 1 },
      ],
      fullyGoneByMs: null,
    });
    expect(JSON.stringify(e)).not.toMatch(/u-1001|t-acme|o-1|o-2/);
    expect(entry(acme, "req-2")).toMatchObject({ subjectKind: "tenant", subjectHash: K1("t-acme"), tenantHash: null });
  });

  it("carry the request's 'fully gone by' date, a date and nothing else", () => {
    const e = buildLedgerEntry({ requestId: "req-1", subject: ada, policyVersion: "v1", erasedAtMs: 42, masked: [], fullyGoneByMs: 42 + 35 * 86_400_000 }, K1, patternOf);
    expect(e.fullyGoneByMs).toBe(42 + 35 * 86_400_000);
  });

  it("a later write moves the date later only: set once a purge gives one, later after a replay, never earlier or unset", () => {
    expect(goneByUpdate(null, null)).toBeNull();
    expect(goneByUpdate(5_000, null)).toBeNull();
    expect(goneByUpdate(null, 5_000)).toBe(5_000);
    expect(goneByUpdate(5_000, 9_000)).toBe(9_000);
    expect(goneByUpdate(5_000, 5_000)).toBeNull();
    expect(goneByUpdate(9_000, 5_000)).toBeNull();
  });

  it("a path no registry pattern names is wildcarded", () => {
    expect(wildcardCollection("a/x-1/b/y-2")).toBe("a/*/b");
    expect(maskedByCollection([{ path: "a/x-1/b/y-2", fields: ["f"] }], () => null)).toEqual([{ collection: "a/*/b", fields: ["f"], count: 1 }]);
  });

  it("the entry's id is the request id, which must be a plain document id", () => {
    expect(ledgerEntryId("AbC123_-x")).toBe("AbC123_-x");
    for (const bad of ["", "a/b", "..", "x".repeat(201)]) expect(() => ledgerEntryId(bad)).toThrow(/LEDGER_BAD_REQUEST_ID/);
  });

  it("a second write agrees when it names the same request and subject, whatever its time or masks", () => {
    const first = entry(ada, "req-1", 1_000);
    const retry = { ...entry(ada, "req-1", 9_000), masked: [{ collection: "c", fields: ["f"], count: 1 }], policyVersion: "v2" };
    expect(entryConflicts(first, retry)).toEqual([]);
    expect(entryConflicts(first, entry({ ...ada, uid: "u-2" }, "req-1"))).toEqual(["subjectHash"]);
    expect(entryConflicts(first, entry({ ...ada, tenantId: "t-2" }, "req-1"))).toEqual(["tenantHash"]);
    expect(entryConflicts(first, entry(acme, "req-1"))).toEqual(["subjectKind", "subjectHash", "tenantHash"]);
    expect(entryConflicts({}, first)).toEqual(["requestId", "subjectKind", "subjectHash", "tenantHash"]);
  });
});

describe("matching a restored database's subjects against the ledger", () => {
  const ring = (id: string) => [K1(id)];

  it("finds a user by uid and tenant, a tenant by id, each once", () => {
    const entries = [entry(ada, "r-user"), entry(acme, "r-tenant")];
    const candidates: Subject[] = [ada, { type: "user", uid: "u-1002", tenantId: "t-acme" }, acme, ada, { type: "tenant", tenantId: "t-other" }];
    expect(matchLedger(entries, candidates, ring)).toEqual([
      { subject: ada, entry: entries[0] },
      { subject: acme, entry: entries[1] },
    ]);
  });

  it("a user erased in one tenant is not matched in another, and a tenant hash never matches a user", () => {
    const entries = [entry(ada, "r-user"), entry({ type: "tenant", tenantId: "u-1001" }, "r-odd")];
    expect(matchLedger(entries, [{ type: "user", uid: "u-1001", tenantId: "t-other" }], ring)).toEqual([]);
    expect(matchLedger([entry(acme, "r-t")], [{ type: "user", uid: "t-acme", tenantId: "t-acme" }], ring)).toEqual([]);
  });

  it("after a key rotation, entries made with the old key still match (the ring lists both)", () => {
    const old = entry(ada, "r-old", 1_000, K2);
    expect(matchLedger([old], [ada], ring)).toEqual([]);
    expect(matchLedger([old], [ada], (id) => [K1(id), K2(id)])).toEqual([{ subject: ada, entry: old }]);
  });

  it("a request group's member is recorded as one, and replayed as its scope's part only (the lead erased the rest)", () => {
    const inB: Subject = { type: "user", uid: "u-1001", tenantId: "t-b", scopedOnly: true };
    const lead = entry(ada, "r-lead");
    const member = entry(inB, "r-member");
    expect(lead.scopedOnly).toBeUndefined();
    expect(member).toMatchObject({ scopedOnly: true, tenantHash: K1("t-b") });
    // Found in the restored copy as a plain (uid, scope) candidate; matched, it carries the member's restriction.
    const found = matchLedger([lead, member], [ada, { type: "user", uid: "u-1001", tenantId: "t-b" }], ring);
    expect(found.map((m) => m.subject)).toEqual([ada, inB]);
    // Its entry agrees with a retried write of itself: the restriction is not one of the facts that must match.
    expect(entryConflicts(member, entry(inB, "r-member"))).toEqual([]);
  });

  it("several erasures of one subject: the latest names the request to replay", () => {
    const a = entry(ada, "r-a", 1_000);
    const b = entry(ada, "r-b", 5_000);
    expect(matchLedger([a, b], [ada], ring)[0]!.entry.requestId).toBe("r-b");
    expect(matchLedger([], [ada, acme], ring)).toEqual([]);
  });
});

describe("where subjects appear, from the data map", () => {
  it("v1: users by path and by foreign key, tenants by path (listed, so a missing tenant document is found) and by tenantId", () => {
    const users = subjectSources("user", pol.dataMap("user"), "tenantId");
    expect(users).toEqual(
      expect.arrayContaining([
        { pattern: "tenants/{tenantId}/users/{uid}", collectionId: "users", parent: null, field: null },
        { pattern: "userDirectory/{uid}", collectionId: "userDirectory", parent: "userDirectory", field: null },
        { pattern: "tenants/{tenantId}/orders/{docId}", collectionId: "orders", parent: null, field: "customerId" },
        { pattern: "**/messages/{docId}", collectionId: "messages", parent: null, field: "authorId" },
        { pattern: "activity/{docId}", collectionId: "activity", parent: "activity", field: "subjectUid" },
        { pattern: "sessions/{docId}", collectionId: "sessions", parent: "sessions", field: "uid" },
        { pattern: "auditRecords/{docId}", collectionId: "auditRecords", parent: "auditRecords", field: "actorUid" },
      ]),
    );
    expect(users).toHaveLength(7);
    const tenants = subjectSources("tenant", pol.dataMap("tenant"), "tenantId");
    expect(tenants).toContainEqual({ pattern: "tenants/{tenantId}", collectionId: "tenants", parent: "tenants", field: null });
    expect(tenants).toContainEqual({ pattern: "events/{docId}", collectionId: "events", parent: "events", field: "tenantId" });
    expect(tenants.every((s) => s.field === null || s.field === "tenantId")).toBe(true);
  });

  it("reads the subject off a found document: the id from the path or the field, a user's tenant from the path or tenantId", () => {
    const users = subjectSources("user", pol.dataMap("user"), "tenantId");
    const by = (pattern: string) => users.find((u) => u.pattern === pattern)!;
    const [profile, directory, orders, messages] = [by("tenants/{tenantId}/users/{uid}"), by("userDirectory/{uid}"), by("tenants/{tenantId}/orders/{docId}"), by("**/messages/{docId}")];
    expect(subjectOfFound("user", profile, "tenants/t-acme/users/u-1", {}, "tenantId")).toEqual({ type: "user", uid: "u-1", tenantId: "t-acme" });
    expect(subjectOfFound("user", directory, "userDirectory/u-1", { tenantId: "t-b" }, "tenantId")).toEqual({ type: "user", uid: "u-1", tenantId: "t-b" });
    expect(subjectOfFound("user", directory, "userDirectory/u-1", {}, "tenantId")).toBeNull();
    expect(subjectOfFound("user", orders, "tenants/t-acme/orders/o-1", { id: "u-9", tenantId: "t-x" }, "tenantId")).toEqual({ type: "user", uid: "u-9", tenantId: "t-acme" });
    expect(subjectOfFound("user", orders, "tenants/t-acme/orders/o-1", { id: "" }, "tenantId")).toBeNull();
    expect(subjectOfFound("user", messages, "tenants/t-acme/orders/o-1/messages/m-1", { id: "u-9", tenantId: "t-acme" }, "tenantId")).toEqual({ type: "user", uid: "u-9", tenantId: "t-acme" });
    // A collection group reaches collections of the same id elsewhere: the pattern decides what counts.
    expect(subjectOfFound("user", profile, "other/x/users/u-1", {}, "tenantId")).toBeNull();
    const [tenantTree] = subjectSources("tenant", pol.dataMap("tenant"), "tenantId");
    expect(subjectOfFound("tenant", tenantTree!, "tenants/t-acme", {}, "tenantId")).toEqual({ type: "tenant", tenantId: "t-acme" });
  });
});

describe("where a bucket's paths carry a subject's ids", () => {
  it("the folders down to the subject's ids, or none when an id is not a whole folder", () => {
    expect(storageSubjectSegments("tenants/{tenantId}/users/{uid}/", ["uid", "tenantId"])).toEqual(["tenants", "{tenantId}", "users", "{uid}"]);
    expect(storageSubjectSegments("tenants/{tenantId}/files/", ["tenantId"])).toEqual(["tenants", "{tenantId}"]);
    expect(storageSubjectSegments("users/{uid}/", ["uid"])).toEqual(["users", "{uid}"]);
    expect(storageSubjectSegments("avatars/{uid}.jpg", ["uid"])).toBeNull();
    expect(storageSubjectSegments("public/", ["uid"])).toBeNull();
  });
});
