import { describe, expect, it } from "vitest";
import { DAY_MS, PolicyIndex } from "../../../functions/src/kernel/policy";
import { requestClassOf, requestPeriods } from "../../../functions/src/requests/rules/requests";
import { RegistrySchema, type Registry } from "../../../functions/src/kernel/policy-schema";
import { buildDeletionPlan } from "../../../functions/src/plan/rules";
import { maskedFieldNames, maskResidue } from "../../../functions/src/purge/rules/batches";
import { loadCurrent } from "../../helpers/policy";
import { PATH_LOOKUP, workspacesRegistry } from "../../fixtures/workspaces/registry";

/** A single-tenant app: no scope kind, chats held as subtrees, a member leaving a chat. */
function singleTenant(over: Record<string, unknown> = {}): unknown {
  const base = loadCurrent();
  return {
    ...base,
    subjects: { user: { scopeLookups: [] } },
    subtreeHoldRoots: ["chats/{chatId}"],
    // The base's processors receive AtlasMart's entries, which this data map does not have.
    processors: [],
    collections: [
      { pattern: "users/{uid}", retentionClass: "user-delete" },
      { pattern: "chats/{chatId}", retentionClass: "user-delete" },
    ],
    dataMap: {
      user: [
        { id: "profile", kind: "doc", path: "users/{uid}", action: "delete", recursive: true },
        { id: "chats", kind: "query", collection: "chats", where: [["memberIds", "array-contains", "{uid}"]], action: "removeFromArray", arrayField: "memberIds", reason: "the chat stays for the others", reasonCode: "SHARED_THREAD" },
      ],
    },
    ...over,
  };
}

const NOW = Date.parse("2027-01-01T00:00:00Z");

describe("subjects in the registry", () => {
  it("AtlasMart's v3 names its tenant scope, and a hold on a tenant holds its subtree", () => {
    const pol = new PolicyIndex(loadCurrent());
    expect(pol.scope).toMatchObject({ name: "tenant", key: "tenantId", record: "tenants/{tenantId}" });
    expect(pol.subjectVars({ type: "user", uid: "u-1", tenantId: "t-1" })).toEqual({ uid: "u-1", tenantId: "t-1" });
    expect(pol.subjectVars({ type: "tenant", tenantId: "t-1" })).toEqual({ tenantId: "t-1" });
    expect(pol.scopeRecordPath("t-1")).toBe("tenants/t-1");
    expect(pol.scopeOfRecord("tenants/t-1")).toBe("t-1");
    expect(pol.scopeOfRecord("tenants/t-1/users/u-1")).toBeNull();
    expect(pol.scopeCollection()).toBe("tenants");
    expect(pol.subtreeHoldRoots()).toEqual(["tenants/{tenantId}"]);
  });

  it("an app without a scope kind: users belong to none, and a chat is a subtree root", () => {
    const pol = new PolicyIndex(RegistrySchema.parse(singleTenant()));
    expect(pol.scope).toBeUndefined();
    expect(pol.subjectVars({ type: "user", uid: "u-1", tenantId: "" })).toEqual({ uid: "u-1" });
    expect(pol.scopeRecordPath("x")).toBeNull();
    expect(pol.dataMap("tenant")).toEqual([]);
    expect(pol.subtreeHoldRoots()).toEqual(["chats/{chatId}"]);
  });

  it("refuses a registry whose subjects and data map disagree, naming what is wrong", () => {
    const issues = (r: unknown) => (RegistrySchema.safeParse(r).error?.issues ?? []).map((i) => i.message);
    expect(issues(singleTenant({ subjects: { user: { scopeLookups: [{ via: "claim", claim: "org" }] } } }))).toContain("subjects.user.scopeLookups needs subjects.scope");
    const base = loadCurrent();
    expect(issues({ ...base, subjects: { ...base.subjects, scope: { name: "tenant", key: "tenantId", record: "tenants/{id}" } } })).toContain("subjects.scope.record must end with its key {tenantId}");
    expect(issues({ ...base, dataMap: { user: base.dataMap.user } })).toContain("dataMap.tenant: a scope kind (tenant) needs its closure's data map");
    const tenantMap = { tenant: [{ id: "t", kind: "doc", path: "workspaces/{workspaceId}", action: "delete" }] };
    expect(issues(singleTenant({ dataMap: { ...(singleTenant() as Registry).dataMap, ...tenantMap } }))).toContain("dataMap.tenant needs subjects.scope");
    const stray = { id: "x", kind: "doc", path: "teams/{teamId}/members/{uid}", action: "delete" };
    expect(issues(singleTenant({ dataMap: { user: [...(singleTenant() as Registry).dataMap.user, stray] } }))).toContain("dataMap.user.x: {teamId} is not a variable of this subject");
    const noField = { id: "y", kind: "query", collection: "chats", where: [["memberIds", "array-contains", "{uid}"]], action: "removeFromArray", reason: "r", reasonCode: "R" };
    expect(issues(singleTenant({ dataMap: { user: [noField] } }))).toContain("y: removeFromArray needs arrayField");
  });

  it("takes the uids of no person (systemUids): at most 100, each a uid's 1 to 128 characters, none twice", () => {
    const withSystem = (systemUids: unknown) => RegistrySchema.safeParse(singleTenant({ subjects: { user: { scopeLookups: [], systemUids } } }));
    expect(withSystem(["system", "bot-moderator"]).data?.subjects?.user.systemUids).toEqual(["system", "bot-moderator"]);
    expect(RegistrySchema.parse(singleTenant()).subjects?.user.systemUids).toBeUndefined();
    expect(withSystem(["system", "system"]).error?.issues.map((i) => i.message)).toEqual(["subjects.user.systemUids lists a uid twice"]);
    expect(withSystem([""]).success).toBe(false);
    expect(withSystem(["x".repeat(129)]).success).toBe(false);
    expect(withSystem(Array.from({ length: 101 }, (_, i) => `bot-${i}`)).success).toBe(false);
  });

  it("a request's periods come from the class the registry names for it, else the product's conventional one", () => {
    const named = RegistrySchema.parse(singleTenant({ subjects: { user: { scopeLookups: [], requestClass: "tenant-account" } } }));
    const ada = { type: "user" as const, uid: "u-1", tenantId: "" };
    expect(requestClassOf(ada, new PolicyIndex(named))).toBe("tenant-account");
    expect(requestPeriods(ada, 0, new PolicyIndex(named))).toEqual({ graceEndsAtMs: 30 * DAY_MS, dueAtMs: 60 * DAY_MS });
    expect(requestClassOf(ada, new PolicyIndex(loadCurrent()))).toBe("user-delete");
    const unknown = RegistrySchema.safeParse(singleTenant({ subjects: { user: { scopeLookups: [], requestClass: "session-30d" } } }));
    expect(unknown.error?.issues.map((i) => i.message)).toEqual(["subjects.user.requestClass session-30d must name a class with dueDays"]);
  });

  it("plans a member leaving a chat as removeFromArray, kept for the others, and a held chat as retained", () => {
    const pol = new PolicyIndex(RegistrySchema.parse(singleTenant()));
    const doc = { retentionClass: "user-delete", lifecycleState: "ACTIVE" as const, legalHold: false, expireAtMs: null, retainUntilMs: null };
    const found = [
      { path: "users/u-1", entryId: "profile", doc },
      { path: "chats/c-1", entryId: "chats", doc },
      { path: "chats/c-2", entryId: "chats", doc },
    ];
    const plan = buildDeletionPlan({ type: "user", uid: "u-1", tenantId: "" }, found, [{ holdId: "h-1", targetPath: "chats/c-2", reasonCode: "LITIGATION" }], pol, NOW);
    expect(plan.delete).toEqual(["users/u-1"]);
    expect(plan.retain).toEqual([
      { path: "chats/c-1", action: "removeFromArray", reasonCode: "SHARED_THREAD", reason: "the chat stays for the others", fields: ["memberIds"] },
      { path: "chats/c-2", action: "retain", reasonCode: "LITIGATION", reason: "retention hold h-1", holdId: "h-1", deferredByHold: "removeFromArray" },
    ]);
  });

  it("a mask item that takes the uid out of an array is done only when the array no longer holds it", () => {
    const item = { fields: ["customerName"], pull: ["memberIds"] };
    const doc = (d: Record<string, unknown>) => (f: string) => d[f];
    expect(maskResidue(item, doc({ customerName: "A", memberIds: ["u-1", "u-2"] }), "u-1")).toEqual(["customerName", "memberIds[]"]);
    expect(maskResidue(item, doc({ memberIds: ["u-2"] }), "u-1")).toEqual([]);
    expect(maskResidue(item, doc({ memberIds: "u-1" }), "u-1")).toEqual([]);
    expect(maskedFieldNames(item)).toEqual(["customerName", "memberIds[]"]);
  });
});

describe("a user in several scopes", () => {
  it("a path lookup names its membership documents; its collection carries the scope's key and nothing else", () => {
    const base = workspacesRegistry();
    expect(base.subjects?.user.scopeLookups).toEqual([PATH_LOOKUP]);
    const issues = (lookup: unknown) => (RegistrySchema.safeParse({ ...base, subjects: { ...base.subjects, user: { scopeLookups: [lookup] } } }).error?.issues ?? []).map((i) => i.message);
    expect(issues({ via: "path", pattern: "workspaces/{workspaceId}/members/{uid}", userField: "uid" })).toEqual([]);
    expect(issues({ via: "path", pattern: "members/{memberId}", userField: "uid" })[0]).toMatch(/a path lookup's collection must carry the scope's key \{workspaceId\}/);
    expect(issues({ via: "path", pattern: "orgs/{orgId}/workspaces/{workspaceId}/members/{memberId}", userField: "uid" })[0]).toMatch(/and no other variable/);
    expect(issues({ via: "path", pattern: "workspaces/{workspaceId}/members", userField: "uid" }).length).toBeGreaterThan(0);
    expect(issues({ via: "path", pattern: "workspaces/{workspaceId}/members/{memberId}", userField: "a.b" }).length).toBeGreaterThan(0);
  });

  it("a group member that is not the lead walks only the data-map entries that name the scope", () => {
    const pol = new PolicyIndex(workspacesRegistry());
    const ids = (s: Parameters<PolicyIndex["dataMapOf"]>[0]) => pol.dataMapOf(s).map((e) => e.id);
    expect(ids({ type: "user" })).toEqual(["profile", "member", "docs", "memberships"]);
    expect(ids({ type: "user", scopedOnly: true })).toEqual(["member", "docs", "memberships"]);
    expect(ids({ type: "tenant" })).toEqual(["workspace-tree", "memberships"]);
    // An app without a scope kind names no scope: every entry is the uid's alone.
    const single = new PolicyIndex(RegistrySchema.parse(singleTenant()));
    expect(single.dataMap("user").map((e) => single.entryNamesScope(e))).toEqual([false, false]);
  });

  it("a plan of a group member names it, so its manifest hash differs from the lead's even on the same data", () => {
    const pol = new PolicyIndex(workspacesRegistry());
    const lead = buildDeletionPlan({ type: "user", uid: "u-1", tenantId: "w-a" }, [], [], pol, NOW);
    const member = buildDeletionPlan({ type: "user", uid: "u-1", tenantId: "w-a", scopedOnly: true }, [], [], pol, NOW);
    expect(member.manifestHash).not.toBe(lead.manifestHash);
    // Outside a group the subject hashes as it always has.
    expect(buildDeletionPlan({ type: "user", uid: "u-1", tenantId: "w-a" }, [], [], pol, NOW).manifestHash).toBe(lead.manifestHash);
  });
});
