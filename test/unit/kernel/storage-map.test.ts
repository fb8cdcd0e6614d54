/**
 * The data map's Cloud Storage entries, pure: the schema's rules for them (kernel/policy-schema.ts), how their
 * templates are filled and matched, and which objects a hold covers (kernel/storage-map.ts).
 */
import { describe, expect, it } from "vitest";
import { RegistrySchema, type Registry, type StorageEntry } from "../../../functions/src/kernel/policy-schema";
import {
  bindingsUnder,
  coverTargets,
  fillObjectTemplate,
  holdTargetCoversObject,
  isObjectPath,
  listingPrefix,
  objectLabel,
  objectPath,
  objectVars,
  parseObjectLabel,
  parseObjectPath,
  resolveBucket,
} from "../../../functions/src/kernel/storage-map";
import { PolicyIndex } from "../../../functions/src/kernel/policy";
import { loadCurrent, loadVersion } from "../../helpers/policy";
import { PATH_LOOKUP, workspacesRegistry } from "../../fixtures/workspaces/registry";

const entry = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  id: "uploads",
  kind: "storage",
  bucket: "(default)",
  prefix: "tenants/{tenantId}/users/{uid}/",
  heldWith: "tenants/{tenantId}/users/{uid}",
  action: "delete",
  ...over,
});

/** The current AtlasMart registry with `user` (and, optionally, `tenant`) storage entries in place of its own. */
function withStorage(user: Record<string, unknown>[], tenant: Record<string, unknown>[] = []): unknown {
  const base = loadCurrent();
  return {
    ...base,
    dataMap: {
      user: [...base.dataMap.user.filter((e) => e.kind !== "storage"), ...user],
      tenant: [...(base.dataMap.tenant ?? []).filter((e) => e.kind !== "storage"), ...tenant],
    },
  };
}

const issues = (r: unknown): string[] => {
  const parsed = RegistrySchema.safeParse(r);
  return parsed.success ? [] : parsed.error.issues.map((i) => i.message);
};

describe("the schema of a storage entry", () => {
  it("accepts the current registry's entries: a user's uploads by prefix, a tenant's files and each customer's uploads", () => {
    const pol = new PolicyIndex(loadCurrent());
    expect(pol.storageMap("user").map((e) => e.id)).toEqual(["uploads"]);
    expect(pol.storageMap("tenant").map((e) => e.id)).toEqual(["tenant-files", "customer-uploads"]);
    // Everything that walks documents never sees them.
    expect(pol.dataMap("user").some((e) => e.kind === "storage")).toBe(false);
    expect(pol.hasStorageEntries).toBe(true);
    expect(new PolicyIndex(loadVersion("v3")).hasStorageEntries).toBe(false);
  });

  it("accepts one object's name and a bucket with {projectId}", () => {
    expect(issues(withStorage([entry({ prefix: undefined, object: "avatars/{uid}.jpg", heldWith: "userDirectory/{uid}", bucket: "{projectId}-media" })]))).toEqual([]);
  });

  it("refuses mask, archive and removeFromArray, recursive, external and document fields, with a reason", () => {
    expect(issues(withStorage([entry({ action: "mask", maskFields: ["x"], reason: "r", reasonCode: "R" })]))).toContainEqual(expect.stringMatching(/kind storage takes delete or retain, not mask/));
    expect(issues(withStorage([entry({ action: "archive", reason: "r", reasonCode: "R" })]))).toContainEqual(expect.stringMatching(/not archive: .*objects have no archive/));
    expect(issues(withStorage([entry({ action: "removeFromArray", arrayField: "m", reason: "r", reasonCode: "R" })]))).toContainEqual(expect.stringMatching(/not removeFromArray/));
    expect(issues(withStorage([entry({ recursive: true })]))).toContainEqual(expect.stringMatching(/recursive is for documents/));
    expect(issues(withStorage([entry({ external: true })]))).toContainEqual(expect.stringMatching(/external is for documents/));
    expect(issues(withStorage([entry({ path: "x/{uid}" })]))).toContainEqual(expect.stringMatching(/path is for documents/));
    expect(issues(withStorage([entry({ where: [["a", "==", "{uid}"]] })]))).toContainEqual(expect.stringMatching(/where is for documents/));
    // And a document entry cannot name a bucket.
    expect(issues(withStorage([{ id: "d", kind: "doc", path: "userDirectory/{uid}", action: "delete", bucket: "(default)" }]))).toContainEqual(expect.stringMatching(/bucket is only for kind storage/));
  });

  it("needs a bucket, exactly one of prefix and object, and heldWith", () => {
    expect(issues(withStorage([entry({ bucket: undefined })]))).toContainEqual(expect.stringMatching(/needs bucket/));
    expect(issues(withStorage([entry({ object: "a/{uid}.jpg" })]))).toContainEqual(expect.stringMatching(/exactly one of prefix/));
    expect(issues(withStorage([entry({ prefix: undefined })]))).toContainEqual(expect.stringMatching(/exactly one of prefix/));
    expect(issues(withStorage([entry({ heldWith: undefined })]))).toContainEqual(expect.stringMatching(/needs heldWith/));
  });

  it("refuses a prefix whose variable is not followed by /, or that does not end with /", () => {
    // users/{uid} would also reach users/{uid}0...: another subject whose id starts with this one's.
    expect(issues(withStorage([entry({ prefix: "tenants/{tenantId}/users/{uid}" })]))).toContainEqual(expect.stringMatching(/must end with \//));
    expect(issues(withStorage([entry({ prefix: "tenants/{tenantId}/u-{uid}-files/" })]))).toContainEqual(expect.stringMatching(/\{uid\} must be followed by \//));
  });

  it("refuses a template that names no subject, starts with a variable, or whose heldWith needs a variable the name lacks", () => {
    expect(issues(withStorage([entry({ prefix: "public/", heldWith: "userDirectory/x" })]))).toContainEqual(expect.stringMatching(/names no subject variable/));
    expect(issues(withStorage([entry({ prefix: "{uid}/", heldWith: "userDirectory/{uid}" })]))).toContainEqual(expect.stringMatching(/starts with a literal/));
    expect(issues(withStorage([entry({ prefix: "uploads/{uid}/", heldWith: "tenants/{tenantId}/users/{uid}" })]))).toContainEqual(expect.stringMatching(/\{tenantId\} must also be in the object template/));
  });

  it("checks the subject's variables: a user's entry may not name a stranger, a scope's names {uid} only after its own key", () => {
    expect(issues(withStorage([entry({ prefix: "x/{orgId}/{uid}/", heldWith: "userDirectory/{uid}" })]))).toContainEqual(expect.stringMatching(/\{orgId\} is not a variable of this subject/));
    // In a scope's map {uid} is read from each name, after the scope's own key (which bounds the listing)...
    expect(issues(withStorage([entry()], [entry({ id: "customer-uploads" })]))).toEqual([]);
    // ...never before it.
    expect(issues(withStorage([entry()], [entry({ id: "c", prefix: "users/{uid}/tenants/{tenantId}/" })]))).toContainEqual(expect.stringMatching(/first variable must be the subject's own/));
  });
});

describe("object names", () => {
  it("an object's path and label, which never collide with a document path", () => {
    expect(objectPath("b-1", "a/b.jpg")).toBe("gs://b-1/a/b.jpg");
    expect(isObjectPath("gs://b-1/a")).toBe(true);
    expect(isObjectPath("users/u-1")).toBe(false);
    expect(parseObjectPath("gs://b-1/a/b.jpg")).toEqual({ bucket: "b-1", name: "a/b.jpg" });
    expect(parseObjectPath("gs://b-1/")).toBeNull();
    expect(parseObjectPath("users/u-1")).toBeNull();
    expect(objectLabel({ bucket: "b", name: "n#1/x", generation: "17" })).toBe("gs://b/n#1/x#17");
    expect(parseObjectLabel("gs://b/n#1/x#17")).toEqual({ path: "gs://b/n#1/x", generation: "17" });
    expect(parseObjectLabel("gs://b/n")).toBeNull();
  });

  it("resolves (default) and {projectId}", () => {
    const ctx = { projectId: "demo-p", defaultBucket: "demo-p.appspot.com" };
    expect(resolveBucket("(default)", ctx)).toBe("demo-p.appspot.com");
    expect(resolveBucket("{projectId}-media", ctx)).toBe("demo-p-media");
    expect(resolveBucket("plain", ctx)).toBe("plain");
  });

  it("fills a template, refusing an id with / (it would reach into another subject's folder)", () => {
    expect(fillObjectTemplate("tenants/{tenantId}/users/{uid}/", { tenantId: "t-1", uid: "u-1" })).toBe("tenants/t-1/users/u-1/");
    expect(() => fillObjectTemplate("users/{uid}/", { uid: "a/b" })).toThrow(/STORAGE_ID_WITH_SLASH/);
    expect(() => fillObjectTemplate("users/{uid}/", {})).toThrow(/needs uid/);
  });

  it("reads a name's variables: a prefix entry reaches what starts with it, an object entry its one name", () => {
    const prefix = { prefix: "tenants/{tenantId}/users/{uid}/" };
    expect(objectVars(prefix, "tenants/t-1/users/u-1/a/b.jpg")).toEqual({ tenantId: "t-1", uid: "u-1" });
    expect(objectVars(prefix, "tenants/t-1/users/u-1")).toBeNull();
    expect(objectVars(prefix, "tenants/t-1/files/u-1/x")).toBeNull();
    const one = { object: "avatars/{uid}.jpg" };
    expect(objectVars(one, "avatars/u-1.jpg")).toEqual({ uid: "u-1" });
    expect(objectVars(one, "avatars/u-1.jpg.bak")).toBeNull();
    // Regular-expression characters in a template are literal.
    expect(objectVars({ prefix: "a.b/{uid}/" }, "aXb/u/x")).toBeNull();
  });

  it("lists from the longest prefix the known variables fix, and never from an empty one", () => {
    const e = { prefix: "tenants/{tenantId}/users/{uid}/" };
    expect(listingPrefix(e, { tenantId: "t-1", uid: "u-1" })).toBe("tenants/t-1/users/u-1/");
    expect(listingPrefix(e, { tenantId: "t-1" })).toBe("tenants/t-1/users/");
    expect(listingPrefix(e, {})).toBe("tenants/");
    expect(listingPrefix({ prefix: "{uid}/" }, {})).toBeNull();
  });
});

describe("which objects a hold covers (heldWith)", () => {
  const e = entry() as unknown as StorageEntry;

  it("a hold on the heldWith document or an ancestor covers; one elsewhere or deeper does not", () => {
    expect(bindingsUnder(e, "tenants/t-1/users/u-1")).toEqual({ tenantId: "t-1", uid: "u-1" });
    expect(bindingsUnder(e, "tenants/t-1")).toEqual({ tenantId: "t-1" });
    expect(bindingsUnder(e, "tenants/t-1/orders/o-1")).toBeNull();
    expect(bindingsUnder(e, "tenants/t-1/users/u-1/sessions/s-1")).toBeNull();
    expect(bindingsUnder(e, "chats/c-1")).toBeNull();
    expect(holdTargetCoversObject(e, "tenants/t-1", "tenants/t-1/users/u-1/a.jpg")).toBe(true);
    expect(holdTargetCoversObject(e, "tenants/t-1/users/u-1", "tenants/t-1/users/u-1/a.jpg")).toBe(true);
    expect(holdTargetCoversObject(e, "tenants/t-1/users/u-1", "tenants/t-1/users/u-10/a.jpg")).toBe(false);
    expect(holdTargetCoversObject(e, "tenants/t-2", "tenants/t-1/users/u-1/a.jpg")).toBe(false);
  });

  it("a window's covers are the heldWith documents and their ancestors: the targets whose hold covers it", () => {
    expect(coverTargets(["tenants/t-1/users/u-1", "tenants/t-1/users/u-2", "tenants/t-1/users/u-1"])).toEqual(["tenants/t-1", "tenants/t-1/users/u-1", "tenants/t-1/users/u-2"]);
  });
});

describe("a request group's members and the storage entries (PolicyIndex.storageMapOf)", () => {
  const index = new PolicyIndex(workspacesRegistry([PATH_LOOKUP], { storage: true }));

  it("the lead, a user on their own and a scope walk every entry of their map", () => {
    expect(index.storageMapOf({ type: "user" }).map((e) => e.id)).toEqual(["files", "avatar"]);
    expect(index.storageMapOf({ type: "user", scopedOnly: false }).map((e) => e.id)).toEqual(["files", "avatar"]);
    expect(index.storageMapOf({ type: "tenant" })).toEqual(index.storageMap("tenant"));
  });

  it("a member that is not the lead walks only the entries whose prefix or object names the scope's key", () => {
    expect(index.storageMapOf({ type: "user", scopedOnly: true }).map((e) => e.id)).toEqual(["files"]);
  });
});

// Keep the type import used: a storage entry is a data-map entry with the fields the schema requires of it.
export type _Registry = Registry;
