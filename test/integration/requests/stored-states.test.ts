/**
 * requests/queries.ts#storedRequestStates: the one read of requests by uid or by scope that the audit (open requests,
 * audit/subjects.ts) and a closure's finalize (closed scopes, purge/runner/tenant-accounts.ts) share. Firestore's `in`
 * takes 30 values, so more ids than that must be read in several queries and none lost.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { storedRequestStates } from "../../../functions/src/requests/index";
import { COLLECTIONS } from "../../../functions/src/platform/firestore";
import { clearFirestore, db } from "../../helpers/emulator";

const put = (id: string, fields: Record<string, unknown>) => db().collection(COLLECTIONS.deletionRequests).doc(id).set(fields);

describe("storedRequestStates", () => {
  beforeEach(async () => {
    await clearFirestore();
  });

  it("reads a user's own requests by uid, more ids than one query takes, each id once", async () => {
    const uids = Array.from({ length: 65 }, (_, i) => `u-${String(i).padStart(2, "0")}`);
    await Promise.all(uids.map((uid, i) => put(`r-${uid}`, { uid, subjectType: "user", tenantId: "t-1", state: i % 2 === 0 ? "PENDING" : "PURGED" })));
    // A second, older request of u-64, and a scope's closure whose scope id happens to read u-00: not u-00's request.
    await put("r-u-64-old", { uid: "u-64", subjectType: "user", tenantId: "t-1", state: "CANCELLED" });
    await put("r-closure", { subjectType: "tenant", tenantId: "u-00", state: "PROCESSING" });
    const states = await storedRequestStates("user", [...uids, "u-00", "u-none"]);
    expect(states.size).toBe(65);
    expect(states.get("u-01")).toEqual(["PURGED"]);
    expect(states.get("u-00")).toEqual(["PENDING"]);
    expect([...states.get("u-64")!].sort()).toEqual(["CANCELLED", "PENDING"]);
    expect(states.has("u-none")).toBe(false);
    expect(await storedRequestStates("user", [])).toEqual(new Map());
  });

  it("reads scopes' closures by scope id, never a user's request that names the scope", async () => {
    const scopes = Array.from({ length: 31 }, (_, i) => `t-${i}`);
    await Promise.all(scopes.map((t) => put(`c-${t}`, { subjectType: "tenant", tenantId: t, state: t === "t-30" ? "AWAITING_APPROVAL" : "PURGED" })));
    await put("r-member", { uid: "u-1", subjectType: "user", tenantId: "t-0", state: "PENDING" });
    const states = await storedRequestStates("scope", [...scopes, "t-open"]);
    expect(states.size).toBe(31);
    expect(states.get("t-0")).toEqual(["PURGED"]);
    expect(states.get("t-30")).toEqual(["AWAITING_APPROVAL"]);
    expect(states.has("t-open")).toBe(false);
  });
});
