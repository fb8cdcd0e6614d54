import { describe, expect, it } from "vitest";
import { buildManifest, EXPORT_FORMAT, exportFileFor, exportSetHash, ExportManifestSchema, verifyExport, type ExportFile } from "../../../functions/src/export/rules";
import { policyV2 } from "../../helpers/policy";

const policy = policyV2();
const sha = (c: string) => c.repeat(64);
const files: ExportFile[] = [
  { file: "tenants.orders.jsonl", collection: "tenants/{tenantId}/orders/{orderId}", documents: 2, bytes: 300, sha256: sha("a") },
  { file: "activity.jsonl", collection: "activity/{activityId}", documents: 1, bytes: 100, sha256: sha("b") },
];

describe("a tenant's export", () => {
  it("names one file per collection, by its registry pattern without the ids", () => {
    expect(exportFileFor("tenants/t-acme", policy)).toEqual({ file: "tenants.jsonl", collection: "tenants/{tenantId}" });
    expect(exportFileFor("tenants/t-acme/orders/o-1/messages/m-1", policy)).toEqual({ file: "tenants.orders.messages.jsonl", collection: "tenants/{tenantId}/orders/{orderId}/messages/{messageId}" });
    expect(exportFileFor("sessions/s-1/tokens/tk-1", policy)).toEqual({ file: "sessions.tokens.jsonl", collection: "sessions/{sessionId}/tokens/{tokenId}" });
    // A collection no pattern governs still gets a file of its own.
    expect(exportFileFor("tenants/t-acme/pets/p-1", policy)).toEqual({ file: "tenants.pets.jsonl", collection: "tenants/{id}/pets/{id}" });
  });

  it("builds a manifest whose set hash covers every file, in name order, whatever order they came in", () => {
    const m = buildManifest({ tenantId: "t-acme", exportedAtMs: Date.parse("2027-01-01T00:00:00Z"), policyVersion: "v2", files });
    expect(ExportManifestSchema.parse(m)).toEqual(m);
    expect(m).toMatchObject({ format: EXPORT_FORMAT, documents: 3, files: [files[1], files[0]] });
    expect(m.sha256).toBe(exportSetHash([...files].reverse()));
    expect(exportSetHash([{ ...files[0]!, sha256: sha("c") }, files[1]!])).not.toBe(m.sha256);
  });

  it("verifies a directory against its manifest: each file's hash, size and count, unlisted files, the set hash", () => {
    const m = buildManifest({ tenantId: "t-acme", exportedAtMs: 0, policyVersion: "v2", files });
    const observed = files.map((f) => ({ file: f.file, bytes: f.bytes, lines: f.documents, sha256: f.sha256 }));
    expect(verifyExport(m, observed)).toEqual([]);
    const problems = verifyExport(m, [{ ...observed[0]!, sha256: sha("d"), lines: 3 }, { file: "extra.jsonl", bytes: 1, lines: 1, sha256: sha("e") }]);
    expect(problems.map((p) => [p.problem, p.file])).toEqual([
      ["FILE_MISSING", "activity.jsonl"],
      ["FILE_UNLISTED", "extra.jsonl"],
      ["FILE_CHANGED", "tenants.orders.jsonl"],
    ]);
    // A manifest edited to match an edited file no longer matches its own set hash.
    const edited = { ...m, files: m.files.map((f) => (f.file === "activity.jsonl" ? { ...f, sha256: sha("f") } : f)) };
    expect(verifyExport(edited, observed.map((o) => (o.file === "activity.jsonl" ? { ...o, sha256: sha("f") } : o))).map((p) => p.problem)).toEqual(["SET_HASH_MISMATCH"]);
  });
});

describe("a user's export, with Cloud Storage objects", () => {
  const objects = [
    { file: "objects/000002.jpg", bucket: "b", name: "users/u-1/avatar.jpg", generation: "17", bytes: 12, sha256: sha("c") },
    { file: "objects/000001", bucket: "b", name: "users/u-1/notes", generation: "9", bytes: 5, sha256: sha("d") },
  ];

  it("names its subject, lists each object with its bucket, name and generation, and hashes them into the set", () => {
    const m = buildManifest({ owner: { type: "user", uid: "u-1", tenantId: "" }, exportedAtMs: 0, policyVersion: "v2", files, objects });
    expect(ExportManifestSchema.parse(m)).toEqual(m);
    expect(m.subject).toEqual({ type: "user", uid: "u-1", tenantId: "" });
    expect(m.tenantId).toBeUndefined();
    expect(m.objects?.map((o) => o.file)).toEqual(["objects/000001", "objects/000002.jpg"]);
    expect(m.sha256).toBe(exportSetHash(files, [...objects].reverse()));
    expect(m.sha256).not.toBe(exportSetHash(files));
    // A tenant's export without objects is the format it always was: the same set hash, no objects field.
    const tenant = buildManifest({ tenantId: "t-acme", exportedAtMs: 0, policyVersion: "v2", files });
    expect(tenant.objects).toBeUndefined();
    expect(tenant.sha256).toBe(exportSetHash(files));
    // A manifest names exactly one owner.
    expect(ExportManifestSchema.safeParse({ ...m, tenantId: "t-acme" }).success).toBe(false);
  });

  it("a user exported in several scopes (a request group's members) names them all, and no one tenantId", () => {
    const m = buildManifest({ owner: { type: "user", uid: "u-1", tenantId: "", scopes: ["w-a", "w-b"] }, exportedAtMs: 0, policyVersion: "v2", files, objects });
    expect(ExportManifestSchema.parse(m).subject).toEqual({ type: "user", uid: "u-1", tenantId: "", scopes: ["w-a", "w-b"] });
    // The set hash is over the files and objects, as for one scope.
    expect(m.sha256).toBe(exportSetHash(files, objects));
    expect(ExportManifestSchema.safeParse({ ...m, subject: { ...m.subject, tenantId: "w-a" } }).success).toBe(false);
    expect(ExportManifestSchema.safeParse({ ...m, subject: { ...m.subject, scopes: ["w-a"] } }).success).toBe(false);
  });

  it("verifies each object's file: missing, changed, unlisted", () => {
    const m = buildManifest({ owner: { type: "user", uid: "u-1", tenantId: "" }, exportedAtMs: 0, policyVersion: "v2", files, objects });
    const observed = files.map((f) => ({ file: f.file, bytes: f.bytes, lines: f.documents, sha256: f.sha256 }));
    const seen = objects.map((o) => ({ file: o.file, bytes: o.bytes, sha256: o.sha256 }));
    expect(verifyExport(m, observed, seen)).toEqual([]);
    const problems = verifyExport(m, observed, [{ ...seen[0]!, sha256: sha("e") }, { file: "objects/000009", bytes: 1, sha256: sha("f") }]);
    expect(problems.map((p) => [p.problem, p.file])).toEqual([
      ["OBJECT_MISSING", "objects/000001"],
      ["OBJECT_CHANGED", "objects/000002.jpg"],
      ["OBJECT_UNLISTED", "objects/000009"],
    ]);
  });
});
