/**
 * Closing the demo tenant t-acme end to end, on the seeded AtlasMart demo: a retention-admin asks, a compliance
 * officer approves (the two-person rule), the tenant is hidden and soft-deleted at once, its data is exported
 * for the customer during the grace period, and the nightly purge, run as of a day after the grace, archives
 * its finance records with verified hashes and erases the rest, except what a litigation hold keeps. When the
 * hold is released, the next run finishes the closure. Then: what is gone, what was archived, what was kept and
 * why, the export verifies, the held document survived, the Auth accounts, and the evidence chain.
 */
import { DataKeys, plannedShredMs } from "../../../functions/src/shred/index";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getAuth } from "firebase-admin/auth";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { handleAuthUserDeleted } from "../../../functions/src/entrypoints/auth/on-auth-user-deleted";
import { approveTenantDeletionHandler } from "../../../functions/src/entrypoints/callable/approve-tenant-deletion";
import { getDeletionStatusHandler } from "../../../functions/src/entrypoints/callable/get-deletion-status";
import { requestTenantDeletionHandler } from "../../../functions/src/entrypoints/callable/request-tenant-deletion";
import type { Caller } from "../../../functions/src/entrypoints/callable/shared";
import { exportTenant, verifyExportDir } from "../../../functions/src/export/index";
import { DEMO_DOCS, DEMO_OBJECTS, DEMO_USERS } from "../../../examples/atlasmart/data";
import { seedDemo, seedDemoObjects } from "../../../examples/atlasmart/seed";
import { objectPath } from "../../../functions/src/kernel/storage-map";
import { defaultBucket, readObject } from "../../../functions/src/platform/storage";
import { clearStorage } from "../../helpers/storage";
import { placeHold, releaseHoldById } from "../../../functions/src/holds/index";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { freshGovernedFields } from "../../../functions/src/kernel/governed-write";
import { governedToFirestore } from "../../../functions/src/platform/governed-doc";
import { policy } from "../../../functions/src/platform/registry";
import { runNightlyPurge, type UnitReport } from "../../../functions/src/purge/index";
import { archivedDataHash, sourceHash } from "../../../functions/src/purge/runner/archive";
import { getVisible, readVisible } from "../../../functions/src/ttl/product-reads";
import { scanRetention } from "../../../functions/src/audit/scan";
import { adminApp, db } from "../../helpers/emulator";
import { allGovernedPaths, committedBefore, evidence, expectChainVerifies, expectDeletionsExplained, reset } from "../purge/support";

const RITA: Caller = { uid: "r-3001", tenantId: null, roles: ["retention-admin"] };
const CLARA: Caller = { uid: "c-2001", tenantId: null, roles: ["compliance"] };
const DEV = { type: "staff" as const, id: "c-2002" };
const HELD = "tenants/t-acme/orders/o-1002";
const ARCHIVED_FIRST = "tenants/t-acme/orders/o-1001";

const runAsOf = (asOfMs: number) =>
  runNightlyPurge({ nowMs: asOfMs, asOfMs, dryRun: false, actor: { type: "system", id: "nightlyPurge" }, correlationId: "tenant-closure-e2e", leaseMs: 60_000 });

const authUids = async () => (await getAuth(adminApp()).getUsers(DEMO_USERS.map((u) => ({ uid: u.uid })))).users.map((u) => u.uid).sort();

describe("closing the demo tenant t-acme, end to end", () => {
  const startedMs = Date.now();
  let exportDir: string;
  let requestId: string;
  let holdId: string;
  let graceEndsAtMs: number;
  let archivedHash: string;
  let before: Set<string>;
  /** The demo's objects (t-acme's files, each customer's uploads) and the generations they were seeded at. */
  let objects: Map<string, string>;

  beforeAll(async () => {
    // The purge suites' own database (purge/support.ts), emptied, with the Auth emulator.
    await reset();
    await clearStorage();
    await seedDemo({ nowMs: startedMs });
    objects = await seedDemoObjects();
    // Ben also belongs to a second tenant: his profile there keeps his account when t-acme closes.
    const pol = policy();
    for (const [path, data] of [
      ["tenants/t-globex", { name: "Globex" }],
      ["tenants/t-globex/users/u-1002", { uid: "u-1002", displayName: "Ben Okafor" }],
    ] as const) {
      const cls = pol.classForPath(path)!;
      await db().doc(path).set({
        ...data,
        ...governedToFirestore(freshGovernedFields(cls, { tenantId: "t-globex", policyVersion: pol.version, createdAtMs: startedMs, expireAtMs: null }), "set"),
      });
    }
    exportDir = await mkdtemp(join(tmpdir(), "t-acme-export-"));
  });

  afterAll(async () => {
    await rm(exportDir, { recursive: true, force: true });
    await clearStorage();
  });

  it("1. counsel holds an order; a retention-admin asks and a compliance officer approves: the whole tenant is hidden at once, nothing is deleted", async () => {
    ({ holdId } = await placeHold({ targetPath: HELD, reasonCode: "LITIGATION", releaseAfterMs: null, note: "dispute 2026-17", actor: { type: "staff", id: "c-2001" }, nowMs: Date.now() }));
    before = await allGovernedPaths();
    const asked = await requestTenantDeletionHandler({ tenantId: "t-acme", reason: "Contract ended" }, RITA);
    expect(asked).toMatchObject({ state: "AWAITING_APPROVAL", created: true, graceEndsAt: null });
    requestId = asked.requestId;
    await expect(approveTenantDeletionHandler({ requestId }, RITA)).rejects.toMatchObject({ reason: "TWO_PERSON_RULE" });
    const approved = await approveTenantDeletionHandler({ requestId }, CLARA);
    expect(approved).toMatchObject({ state: "PENDING", approvedBy: "c-2001" });
    graceEndsAtMs = Date.parse(approved.graceEndsAt!);
    const now = Date.now();
    // The product's read path shows nothing of t-acme: the soft-deleted documents, and the held order, whose
    // hold kept it out of the soft delete.
    for (const d of DEMO_DOCS.filter((x) => x.tenantId === "t-acme" && !x.path.startsWith("auditRecords/"))) {
      expect(await getVisible(d.path, now), d.path).toBeNull();
    }
    expect(await readVisible(db().collection("tenants/t-acme/orders"), now)).toEqual([]);
    expect(await readVisible(db().collection("userDirectory").where("tenantId", "==", "t-acme"), now)).toEqual([]);
    // Another tenant is visible.
    expect((await getVisible("tenants/t-globex/users/u-1002", now))?.id).toBe("u-1002");
    // Nothing is deleted yet.
    expect(await allGovernedPaths()).toEqual(before);
    archivedHash = sourceHash((await db().doc(ARCHIVED_FIRST).get()).data()!);
  });

  it("2. the customer's export, taken during the grace period, verifies", async () => {
    const manifest = await exportTenant({ tenantId: "t-acme", outDir: exportDir, nowMs: Date.now() });
    const tenantDocs = DEMO_DOCS.filter((d) => d.tenantId === "t-acme").length;
    expect(manifest.documents).toBe(tenantDocs);
    expect(manifest.files.map((f) => [f.file, f.documents])).toEqual([
      ["activity.jsonl", 2],
      ["auditRecords.jsonl", 1],
      ["events.jsonl", 2],
      ["sessions.jsonl", 2],
      ["sessions.tokens.jsonl", 2],
      ["tenants.jsonl", 1],
      ["tenants.orders.jsonl", 2],
      ["tenants.orders.messages.jsonl", 2],
      ["tenants.users.jsonl", 2],
      ["userDirectory.jsonl", 2],
    ]);
    const orders = (await readFile(join(exportDir, "tenants.orders.jsonl"), "utf8")).trim().split("\n").map((l) => JSON.parse(l) as { path: string; data: Record<string, unknown> });
    expect(orders.map((o) => o.path)).toEqual([ARCHIVED_FIRST, HELD]);
    // Business data only: the retention bookkeeping and the closure marks stay with the service.
    expect(orders[0]!.data).toMatchObject({ customerId: "u-1001", customerName: "Ada Lovelace", totalMinor: 4599 });
    expect(orders[0]!.data.lifecycleState).toBeUndefined();
    // The tenant's files and every customer's uploads, each with the generation exported.
    expect(manifest.tenantId).toBe("t-acme");
    expect((manifest.objects ?? []).map((o) => [o.name, o.generation])).toEqual([...objects].sort(([a], [b]) => (a < b ? -1 : 1)));
    expect(await verifyExportDir(exportDir)).toMatchObject({ ok: true, findings: [] });
  });

  it("3. after the grace: finance records archived first, the rest erased, the held order and what policy keeps remain, accounts deleted unless a member elsewhere", async () => {
    const run = await runAsOf(graceEndsAtMs + DAY_MS);
    expect((run.units as UnitReport[]).find((u) => u.unitKey === requestId)?.outcome).toBe("DONE");
    const request = (await db().doc(`deletionRequests/${requestId}`).get()).data()!;
    expect(request.state).toBe("RETAINED_UNDER_HOLD");
    expect(request.retainedUnderHold).toMatchObject({ count: 1, paths: [HELD], holds: [{ holdId, reasonCode: "LITIGATION" }] });

    // What is gone.
    const after = await allGovernedPaths();
    const gone = [...before].filter((p) => !after.has(p)).sort();
    expect(gone).toEqual(
      [
        "activity/a-001",
        "activity/a-002",
        "events/e-001",
        "events/e-002",
        ARCHIVED_FIRST,
        "tenants/t-acme/orders/o-1001/messages/m-001",
        "tenants/t-acme/orders/o-1001/messages/m-002",
        "sessions/s-1001",
        "sessions/s-1001/tokens/tk-1001",
        "sessions/s-1002",
        "sessions/s-1002/tokens/tk-1002",
        "tenants/t-acme/users/u-1001",
        "tenants/t-acme/users/u-1002",
        "userDirectory/u-1001",
        "userDirectory/u-1002",
      ].sort(),
    );
    // The tenant's files and every customer's uploads went too (objects first, each in a delete window), named in
    // the evidence with the generation deleted: a hold on an order holds no object (none is held with it).
    for (const name of objects.keys()) expect(await readObject(defaultBucket(), name), name).toBeNull();
    const objectLines = (await evidence()).filter((e) => e.action === "PURGE_OBJECTS" && e.requestId === requestId).flatMap((e) => String(e.detail?.objects ?? "").split("\n"));
    expect(objectLines.sort()).toEqual([...objects].map(([name, generation]) => `${objectPath(defaultBucket(), name)}#${generation} deleted`).sort());
    expect(DEMO_OBJECTS.length).toBe(objects.size);
    // What was archived, with verified hashes: the finance record, its copy hashing to what it held.
    const archives = (await db().collection("archives").get()).docs.map((d) => d.data());
    expect(archives).toHaveLength(1);
    const copy = archives[0]!;
    expect(copy).toMatchObject({ sourcePath: ARCHIVED_FIRST, verified: true, sha256: archivedHash, retentionClass: "audit-7y", lifecycleState: "ARCHIVED" });
    // Sealed under the tenant's data key: nothing personal in the clear, and its seal opens to what was hashed.
    expect(copy.data).toBeUndefined();
    expect(await archivedDataHash(copy, archives.length === 1 ? (await db().collection("archives").get()).docs[0]!.id : "", new DataKeys())).toBe(archivedHash);
    expect(request.purgeCounts).toMatchObject({ archived: 1, findings: 0 });

    // What was kept, and why (as compliance reads it).
    const status = await getDeletionStatusHandler({ requestId }, CLARA, { nowMs: graceEndsAtMs + DAY_MS, refreshMs: 0 });
    expect(status.retained.map((r) => [r.path, r.reasonCode]).sort()).toEqual([
      ["auditRecords/ar-001", "AUDIT_RETENTION"],
      ["tenants/t-acme", "RETAINED_DESCENDANT"],
      [HELD, "LITIGATION"],
    ]);
    // Data is still live under the hold: no "fully gone by" date can be promised yet.
    expect(status).toMatchObject({ fullyGoneBy: null, fullyGoneByUnknown: "RETAINED_UNDER_HOLD", erasureCompleteAt: null });
    // The held document survived, untouched: still held, never archived or marked.
    const held = (await db().doc(HELD).get()).data()!;
    expect(held).toMatchObject({ lifecycleState: "LEGAL_HOLD", legalHold: true, customerName: "Ada Lovelace" });
    expect(held.purgeDecision).toBeUndefined();
    expect((await db().doc("auditRecords/ar-001").get()).get("lifecycleState")).toBe("ACTIVE");

    // Auth: Ada's account went with the tenant; Ben's stays (his profile in t-globex); staff accounts are untouched.
    expect(await authUids()).toEqual(["c-2001", "c-2002", "r-3001", "u-1002"]);
    const accounts = (await evidence()).find((e) => e.action === "AUTH_ACCOUNTS_DELETED")!;
    expect(accounts.counts).toEqual({ deleted: 1, alreadyAbsent: 0, keptOtherTenant: 1 });
    expect(accounts.paths).toEqual(["tenants/t-globex/users/u-1002"]);
    // The Auth backstop treats the deleted account as handled by the closure: no request of its own.
    expect(await handleAuthUserDeleted({ uid: "u-1001", customClaims: { tenantId: "t-acme" } }, "evt-ada", Date.now())).toEqual({ requestId, created: false });
    expect((await db().collection("deletionRequests").where("uid", "==", "u-1001").get()).empty).toBe(true);

    // The evidence chain verifies, and every deleted path was recorded once, in the commit that deleted it.
    const entries = await expectChainVerifies();
    await expectDeletionsExplained(entries, gone);
    const archivedEvidence = entries.filter((e) => e.action === "ARCHIVE_VERIFIED");
    expect(archivedEvidence.flatMap((e) => e.paths ?? [])).toEqual([ARCHIVED_FIRST]);
    // Archived before anything of the tenant was deleted.
    const entryOf = (action: string) => entries.find((e) => e.action === action && e.requestId === requestId)!;
    expect(await committedBefore(entryOf("ARCHIVE_VERIFIED"), entryOf("PURGE_BATCH"))).toBe(true);
    // The retention audit finds nothing wrong with what the closure left.
    const audit = await scanRetention({ nowMs: graceEndsAtMs + DAY_MS });
    expect(audit.findings).toEqual([]);
  });

  it("4. once the hold is released, the next run archives the held order, erases the rest of the tenant and ends PURGED", async () => {
    await releaseHoldById({ holdId, reason: "dispute settled", actor: DEV, nowMs: graceEndsAtMs + 2 * DAY_MS });
    const run = await runAsOf(graceEndsAtMs + 3 * DAY_MS);
    expect((run.units as UnitReport[]).find((u) => u.unitKey === requestId)?.outcome).toBe("DONE");
    const request = (await db().doc(`deletionRequests/${requestId}`).get()).data()!;
    expect(request.state).toBe("PURGED");
    // Fully gone by: the finance records' archive copies are the last copies (seven years from the last one's
    // archiving), and their backups outlive them by the longer recovery window (35 days of backups).
    const purgedAtMs = graceEndsAtMs + 3 * DAY_MS;
    // The copies are sealed: fully gone by their key's shred after the end of their retention, plus the KMS destroy
    // delay (30 days), no longer their end of retention plus the backups' 35 days.
    const fullyGoneBy = new Date(plannedShredMs(purgedAtMs + 2557 * DAY_MS)! + 30 * DAY_MS).toISOString();
    expect(await getDeletionStatusHandler({ requestId }, CLARA, { nowMs: purgedAtMs, refreshMs: 0 })).toMatchObject({ fullyGoneBy, fullyGoneByUnknown: null, erasureCompleteAt: null });
    const left = [...(await allGovernedPaths())].filter((p) => p.includes("t-acme") || DEMO_DOCS.some((d) => d.path === p)).sort();
    // Only the audit record, which policy keeps for seven years (and archives before its own purge).
    expect(left).toEqual(["auditRecords/ar-001"]);
    const keys = new DataKeys();
    const archives = await Promise.all(
      (await db().collection("archives").get()).docs.map(async (d) => ({ ...(d.data() as { sourcePath: string; verified: boolean; sha256: string }), hash: await archivedDataHash(d.data(), d.id, keys) })),
    );
    expect(archives.map((a) => [a.sourcePath, a.verified, a.hash === a.sha256]).sort()).toEqual([
      [ARCHIVED_FIRST, true, true],
      [HELD, true, true],
    ]);
    expect(await authUids()).toEqual(["c-2001", "c-2002", "r-3001", "u-1002"]);
    await expectChainVerifies();
    // The export taken for the customer still verifies, and a changed byte is caught.
    expect((await verifyExportDir(exportDir)).ok).toBe(true);
    const file = join(exportDir, "tenants.orders.jsonl");
    await writeFile(file, (await readFile(file, "utf8")).replace("4599", "4600"));
    expect((await verifyExportDir(exportDir)).findings.map((f) => [f.problem, f.file])).toEqual([["FILE_CHANGED", "tenants.orders.jsonl"]]);
  });
});
