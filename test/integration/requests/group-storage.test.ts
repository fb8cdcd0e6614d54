/**
 * A request group meets Cloud Storage objects: a user in two workspaces whose data map names her files in each
 * workspace's folder (`workspaces/{workspaceId}/users/{uid}/`, held with the workspace) and an avatar that names no
 * workspace (`avatars/{uid}/`, held with her profile). Each member of her group plans, holds and deletes its own
 * workspace's files; the avatar is the lead's alone, deleted once, in one delete window and one evidence trail (as
 * the uid-only documents are). The plan and the export of the user by uid cover every member's objects; the replay
 * after a restore erases again what was put back in the bucket, each object by the member that owns it.
 */
import { getAuth } from "firebase-admin/auth";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { planDeletionHandler } from "../../../functions/src/entrypoints/callable/plan-deletion";
import { requestAccountDeletionHandler } from "../../../functions/src/entrypoints/callable/request-account-deletion";
import type { Caller } from "../../../functions/src/entrypoints/callable/shared";
import { exportSubject, verifyExportDir } from "../../../functions/src/export/index";
import { placeHold, releaseHoldById } from "../../../functions/src/holds/index";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { objectPath } from "../../../functions/src/kernel/storage-map";
import { inDatabase } from "../../../functions/src/platform/firestore";
import { useRegistryForTests } from "../../../functions/src/platform/registry";
import { settings } from "../../../functions/src/platform/settings";
import { defaultBucket, readObject } from "../../../functions/src/platform/storage";
import { runNightlyPurge, type UnitReport } from "../../../functions/src/purge/index";
import { subjectsOf } from "../../../functions/src/requests/index";
import { replayErasures } from "../../../functions/src/restore/index";
import { PATH_LOOKUP, WORKSPACES_DATABASE, WORKSPACES_RESTORED_DATABASE, workspacesRegistry } from "../../fixtures/workspaces/registry";
import { adminApp, clearAuth, clearFirestore, db } from "../../helpers/emulator";
import { seedWorkspaceDocs } from "../../fixtures/workspaces/seed";
import { clearStorage, putObject } from "../../helpers/storage";
import { expectChainVerifies, objectDeletions, useDatabase } from "../purge/support";

useDatabase(WORKSPACES_DATABASE);

const ADA: Caller = { uid: "u-ada", tenantId: null, roles: [] };
const CLARA: Caller = { uid: "c-2001", tenantId: null, roles: ["compliance"] };

/** Ada's objects: a file in each workspace's folder, and her avatar (no workspace). Ben's file in w-a. */
const FILE_A = "workspaces/w-a/users/u-ada/plan.pdf";
const FILE_B = "workspaces/w-b/users/u-ada/notes.txt";
const AVATAR = "avatars/u-ada/face.png";
const BEN_FILE = "workspaces/w-a/users/u-ben/draft.txt";
const ADA_DOCS = ["people/u-ada", "workspaces/w-a/docs/d-1", "workspaces/w-a/members/m-1", "workspaces/w-b/docs/d-2", "workspaces/w-b/members/m-2"];

let bucket: string;
const gs = (name: string) => objectPath(bucket, name);


const generationOf = async (name: string) => (await readObject(bucket, name))?.generation ?? null;
const requestsOf = async (uid: string) =>
  (await db().collection("deletionRequests").where("uid", "==", uid).get()).docs.map((d) => ({ id: d.id, tenantId: String(d.get("tenantId")), state: String(d.get("state")) }));
const run = (asOfMs: number) =>
  runNightlyPurge({ nowMs: asOfMs, asOfMs, dryRun: false, actor: { type: "system", id: "nightlyPurge" }, correlationId: "group-storage", leaseMs: 60_000, batchSize: 2, owner: "group-storage" });

describe("a user in two workspaces with Cloud Storage objects, erased by one request group", () => {
  beforeAll(async () => {
    useRegistryForTests(workspacesRegistry([PATH_LOOKUP], { storage: true }));
    await clearFirestore(settings.databaseId());
    await clearAuth();
    await clearStorage();
    bucket = defaultBucket();
    await seedWorkspaceDocs();
    for (const name of [FILE_A, FILE_B, AVATAR, BEN_FILE]) await putObject(bucket, name, `bytes of ${name}`);
    for (const uid of ["u-ada", "u-ben"]) await getAuth(adminApp()).createUser({ uid, email: `${uid}@example.test` });
  });
  afterAll(async () => {
    // The bucket is shared by every suite of the run: leave it empty.
    await clearStorage();
    useRegistryForTests(undefined);
  });

  let groupId: string;
  let graceEndsAtMs: number;
  let holdId: string;

  it("1. the plan by uid covers every member's objects, the avatar once in the lead's part; a member's own plan leaves the avatar to the lead", async () => {
    const plan = await planDeletionHandler({ subject: { type: "user", uid: "u-ada" } }, CLARA);
    expect(plan.subjectRef).toEqual({ type: "user", uid: "u-ada", scope: null });
    // Documents first, then objects, as in one manifest.
    expect(plan.delete).toEqual([...ADA_DOCS, ...[AVATAR, FILE_A, FILE_B].map(gs).sort()]);
    expect(plan.objects.map((o) => o.path)).toEqual([AVATAR, FILE_A, FILE_B].map(gs).sort());
    for (const o of plan.objects) expect(o.generation).toBe(await generationOf(o.path.slice(`gs://${bucket}/`.length)));
    // The lead (w-a): her profile, w-a's two documents, w-a's file and the avatar; w-b: its two documents and its file.
    expect(plan.scopes?.map((s) => [s.scope, s.lead, s.delete])).toEqual([
      ["w-a", true, 5],
      ["w-b", false, 3],
    ]);
    const inB = await planDeletionHandler({ subject: { type: "user", uid: "u-ada", scope: "w-b" } }, CLARA);
    expect(inB.delete).toEqual(["workspaces/w-b/docs/d-2", "workspaces/w-b/members/m-2", gs(FILE_B)]);
    expect(inB.objects.map((o) => o.path)).toEqual([gs(FILE_B)]);
  });

  it("2. exported by uid (what `retention export --subject` does), every member's data and objects go into one verified export", async () => {
    const dir = await mkdtemp(join(tmpdir(), "group-export-"));
    try {
      const out = join(dir, "ada");
      const manifest = await exportSubject({ subject: await subjectsOf({ type: "user", uid: "u-ada" }), outDir: out, nowMs: Date.now() });
      expect(manifest.subject).toEqual({ type: "user", uid: "u-ada", tenantId: "", scopes: ["w-a", "w-b"] });
      expect(manifest.tenantId).toBeUndefined();
      expect(manifest.documents).toBe(ADA_DOCS.length);
      expect((manifest.objects ?? []).map((o) => o.name).sort()).toEqual([AVATAR, FILE_A, FILE_B].sort());
      const verified = await verifyExportDir(out);
      expect(verified.findings).toEqual([]);
      expect(verified.ok).toBe(true);
      // In one workspace: that member's part (the avatar is the lead's, w-a's).
      const inB = await exportSubject({ subject: await subjectsOf({ type: "user", uid: "u-ada", scope: "w-b" }), outDir: join(dir, "ada-w-b"), nowMs: Date.now() });
      expect(inB.subject).toEqual({ type: "user", uid: "u-ada", tenantId: "w-b" });
      expect((inB.objects ?? []).map((o) => o.name)).toEqual([FILE_B]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("3. a hold on w-a keeps w-a's file (marked) and not w-b's; the avatar is deleted once, by the lead", async () => {
    const opened = await requestAccountDeletionHandler({ reason: "leaving" }, ADA);
    groupId = opened.requestId;
    graceEndsAtMs = Date.parse(opened.graceEndsAt);
    expect(opened.group?.requests.map((r) => r.scope)).toEqual(["w-a", "w-b"]);
    ({ holdId } = await placeHold({ targetPath: "workspaces/w-a", reasonCode: "LITIGATION", releaseAfterMs: null, note: "dispute", actor: { type: "staff", id: "c-2001" }, nowMs: Date.now() }));
    expect((await readObject(bucket, FILE_A))?.holdIds).toEqual([holdId]);
    expect((await readObject(bucket, FILE_B))?.holdIds).toEqual([]);
    const r1 = await run(graceEndsAtMs + DAY_MS);
    expect((r1.units as UnitReport[]).filter((u) => u.kind === "request").map((u) => u.outcome)).toEqual(["DONE", "DONE"]);
    const stored = await requestsOf("u-ada");
    const lead = stored.find((r) => r.tenantId === "w-a")!;
    const other = stored.find((r) => r.tenantId === "w-b")!;
    expect([lead.id, lead.state, other.state]).toEqual([groupId, "RETAINED_UNDER_HOLD", "PURGED"]);
    expect(await generationOf(FILE_A)).not.toBeNull();
    expect(await generationOf(FILE_B)).toBeNull();
    expect(await generationOf(AVATAR)).toBeNull();
    expect(await generationOf(BEN_FILE)).not.toBeNull();
    const retained = (await db().doc(`deletionRequests/${lead.id}`).get()).get("retainedUnderHold") as { paths: string[] };
    expect(retained.paths).toContain(gs(FILE_A));
    // Each object deleted once, by the member that owns it: the avatar in the lead's evidence, w-b's file in w-b's.
    const deleted = objectDeletions(await expectChainVerifies());
    expect(deleted.map((d) => [d.path, d.entry.requestId]).sort()).toEqual(
      [
        [gs(AVATAR), lead.id],
        [gs(FILE_B), other.id],
      ].sort(),
    );
    // The other member never planned the avatar.
    const planned = async (requestId: string) => (await db().collection(`retentionJobs/purge-${requestId}/batches`).get()).docs.flatMap((d) => (d.get("items") as { path: string }[]).map((i) => i.path));
    expect(await planned(other.id)).not.toContain(gs(AVATAR));
    expect(await planned(lead.id)).toContain(gs(AVATAR));
  });

  it("4. after the release w-a's file goes too; the group ends PURGED", async () => {
    await releaseHoldById({ holdId, reason: "settled", actor: { type: "staff", id: "c-2002" }, nowMs: graceEndsAtMs + 2 * DAY_MS });
    await run(graceEndsAtMs + 3 * DAY_MS);
    for (const r of await requestsOf("u-ada")) expect(r.state, r.tenantId).toBe("PURGED");
    for (const name of [FILE_A, FILE_B, AVATAR]) expect(await generationOf(name), name).toBeNull();
    expect(await generationOf(BEN_FILE)).not.toBeNull();
    const deleted = objectDeletions(await expectChainVerifies());
    expect(deleted.map((d) => d.path).sort()).toEqual([AVATAR, FILE_A, FILE_B].map(gs).sort());
    expect(deleted.find((d) => d.path === gs(FILE_A))?.entry.requestId).toBe(groupId);
  });

  it("5. a restored backup and objects put back: the replay erases each again by the member that owns it, once", async () => {
    const replay = (apply: boolean) => replayErasures({ databaseId: WORKSPACES_RESTORED_DATABASE, apply, actor: { type: "staff", id: "s-dana" }, nowMs: graceEndsAtMs + 4 * DAY_MS });
    await clearFirestore(WORKSPACES_RESTORED_DATABASE);
    await inDatabase(WORKSPACES_RESTORED_DATABASE, () => seedWorkspaceDocs());
    // The avatar and w-b's file come back (a bucket restore, an undelete from soft delete); w-a's file does not.
    await putObject(bucket, AVATAR, "the avatar, back");
    await putObject(bucket, FILE_B, "w-b's file, back");
    const dry = await replay(false);
    const ada = dry.subjects.filter((s) => s.uid === "u-ada").map((s) => [s.tenantId, s.scopedOnly ?? false, s.toDeleteObjects, s.action]);
    expect(ada.sort()).toEqual([
      ["w-a", false, 1, "erase"],
      ["w-b", true, 1, "erase"],
    ]);
    expect(await generationOf(AVATAR)).not.toBeNull();
    const applied = await replay(true);
    expect(applied.problems).toBe(0);
    for (const s of applied.subjects.filter((x) => x.uid === "u-ada")) expect(s.outcome, s.tenantId).toMatch(/^DONE\b/);
    expect(await generationOf(AVATAR)).toBeNull();
    expect(await generationOf(FILE_B)).toBeNull();
    expect(await generationOf(BEN_FILE)).not.toBeNull();
    await inDatabase(WORKSPACES_RESTORED_DATABASE, async () => {
      for (const p of ADA_DOCS) expect((await db().doc(p).get()).exists, p).toBe(false);
      expect((await db().doc("people/u-ben").get()).exists).toBe(true);
    });
    expect((await replay(false)).subjects.filter((s) => s.uid === "u-ada" && s.action === "erase")).toEqual([]);
  });
});
