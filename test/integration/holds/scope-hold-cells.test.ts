// A hold on a scope's record holds the scope in every governed database with scope data
// (docs/decisions/0036-several-databases.md): AtlasMart's registry with a second database, `metrics`, holding each
// tenant's per-customer metrics under the tenant's record (tenants/{tenantId}/metrics/{metricId}). AtlasMart itself
// keeps its one database; this registry is the test's.
import { readFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getAuth } from "firebase-admin/auth";
import type { DocumentSnapshot } from "firebase-admin/firestore";
import { exportTenant, verifyExportDir } from "../../../functions/src/export/index";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { runNightlyJob } from "../../../functions/src/jobs/nightly-purge";
import type { ChainedEvidence } from "../../../functions/src/evidence/rules";
import { listHolds, placeHold, releaseHoldById, resumeHoldPlacements } from "../../../functions/src/holds/index";
import { placeHold as placeInOneCell } from "../../../functions/src/holds/service";
import { DAY_MS, PRIMARY_CELL } from "../../../functions/src/kernel/policy";
import { RegistrySchema, type Registry } from "../../../functions/src/kernel/policy-schema";
import { inCell } from "../../../functions/src/platform/firestore";
import { writeGoverned } from "../../../functions/src/platform/governed-repo";
import { useRegistryForTests } from "../../../functions/src/platform/registry";
import { getDeletionStatusHandler } from "../../../functions/src/entrypoints/callable/get-deletion-status";
import { approveTenantClosure, openDeletionRequest } from "../../../functions/src/requests/index";
import { adminApp, clearAuth, clearFirestore, db } from "../../helpers/emulator";
import { clearStorage, putObject } from "../../helpers/storage";
import { objectPath } from "../../../functions/src/kernel/storage-map";
import { defaultBucket, readObject } from "../../../functions/src/platform/storage";
import { repoRoot } from "../../helpers/policy";
import { AFTER_GRACE, expectHoldsFenced, putCustomer, runOptions, T0, useDatabase } from "../purge/support";

const PRIMARY_DB = "scope-cells";
const METRICS = "metrics";
const METRICS_DB = "scope-cells-metrics";
const TENANT = "t-acme";
const HELD_METRIC = `tenants/${TENANT}/metrics/mx-u-7`;
const OTHER_TENANT_METRIC = "tenants/t-beta/metrics/mx-u-8";

/** AtlasMart's current registry with a second governed database, `metrics`, under each tenant's record. */
function registryWithMetrics(): Registry {
  const base = JSON.parse(readFileSync(join(repoRoot, "policies", "versions", "v3.json"), "utf8")) as Registry;
  return RegistrySchema.parse({
    ...base,
    databases: [{ id: METRICS, description: "Per-customer metrics of each tenant, under the tenant's record." }],
    collections: [...base.collections, { pattern: "tenants/{tenantId}/metrics/{metricId}", database: METRICS, retentionClass: "user-delete", description: "A customer's metric." }],
    dataMap: {
      ...base.dataMap,
      user: [...base.dataMap.user, { id: "metrics", kind: "query", database: METRICS, collection: "tenants/{tenantId}/metrics", where: [["uid", "==", "{uid}"]], action: "delete" }],
      tenant: [...(base.dataMap.tenant ?? []), { id: "metrics", kind: "query", database: METRICS, collection: "tenants/{tenantId}/metrics", action: "delete" }],
    },
  });
}

const previous = { db: process.env.RETENTION_DATABASE_ID, dbs: process.env.RETENTION_DATABASES };
useDatabase(PRIMARY_DB);
process.env.RETENTION_DATABASES = `${METRICS}=${METRICS_DB}`;
beforeAll(() => useRegistryForTests(registryWithMetrics()));
afterAll(() => {
  useRegistryForTests(undefined);
  if (previous.dbs === undefined) delete process.env.RETENTION_DATABASES;
  else process.env.RETENTION_DATABASES = previous.dbs;
  if (previous.db !== undefined) process.env.RETENTION_DATABASE_ID = previous.db;
});

const CLARA = { type: "staff", id: "c-2001" } as const;
const DEV = { type: "staff", id: "c-2002" } as const;
const holdIn = async (cell: string, holdId: string) => (await inCell(cell, () => db().doc(`retentionHolds/${holdId}`).get())).data();
const existsIn = async (cell: string, path: string) => (await inCell(cell, () => db().doc(path).get())).exists;
const evidenceIn = (cell: string): Promise<ChainedEvidence[]> => inCell(cell, async () => (await db().collection("deletionAudits").get()).docs.map((d) => d.data() as ChainedEvidence));

async function seed(): Promise<void> {
  await clearFirestore(PRIMARY_DB);
  await clearFirestore(METRICS_DB);
  await clearAuth();
  await putCustomer("u-7");
  await inCell(METRICS, async () => {
    await writeGoverned(HELD_METRIC, { uid: "u-7", views: 12 }, TENANT, T0);
    await writeGoverned(OTHER_TENANT_METRIC, { uid: "u-8", views: 3 }, "t-beta", T0);
  });
}

describe("a hold on a tenant's record across governed databases", () => {
  beforeEach(seed);

  it("is one hold placed in the primary and in the database with the tenant's data, and it keeps that data there", async () => {
    const { request } = await openDeletionRequest({ subject: { type: "user", uid: "u-7", tenantId: TENANT }, source: "user", actor: { type: "user", id: "u-7" }, nowMs: T0 });
    const { holdId } = await placeHold({ targetPath: `tenants/${TENANT}`, reasonCode: "LITIGATION", releaseAfterMs: null, actor: CLARA, nowMs: T0 + 1000 });
    expect(await holdIn(PRIMARY_CELL, holdId)).toMatchObject({ state: "ACTIVE", targetType: "subtree", cells: [METRICS], cellsPending: false });
    expect(await holdIn(METRICS, holdId)).toMatchObject({ state: "ACTIVE", targetType: "subtree", targetPath: `tenants/${TENANT}`, tenantId: TENANT, cellOf: PRIMARY_CELL });
    // The copy's flagging ran in the metrics database: the customer's metric there carries the hold.
    expect((await inCell(METRICS, () => db().doc(HELD_METRIC).get())).get("holdIds")).toEqual([holdId]);
    const listed = await listHolds({ callerUid: "c-2002", nowMs: T0 + 2000 });
    expect(listed.items.map((h) => [h.holdId, h.database, h.databases, h.placing])).toEqual([[holdId, PRIMARY_CELL, [PRIMARY_CELL, METRICS], false]]);

    await runNightlyJob(runOptions({ nowMs: AFTER_GRACE, asOfMs: AFTER_GRACE }));
    expect(await existsIn(METRICS, HELD_METRIC)).toBe(true);
    expect(await existsIn(METRICS, OTHER_TENANT_METRIC)).toBe(true);
    expect((await inCell(METRICS, () => db().doc(`deletionRequests/${request.requestId}`).get())).get("state")).toBe("RETAINED_UNDER_HOLD");
    const status = await getDeletionStatusHandler({ requestId: request.requestId }, { uid: "c-2002", tenantId: null, roles: ["compliance"] }, { nowMs: AFTER_GRACE, refreshMs: DAY_MS });
    expect(status.state).toBe("RETAINED_UNDER_HOLD");
    expect(status.retained.filter((r) => r.database === METRICS).map((r) => r.path)).toEqual([HELD_METRIC]);
    const before = new Set([HELD_METRIC, OTHER_TENANT_METRIC]);
    expect(await inCell(METRICS, async () => expectHoldsFenced(await evidenceIn(METRICS), before))).toBe(1);

    // The two-person rule is the hold of record's: its placer is refused everywhere, and nothing is released.
    await expect(releaseHoldById({ holdId, reason: "mine", actor: CLARA, nowMs: AFTER_GRACE })).rejects.toMatchObject({ reason: "TWO_PERSON_RULE" });
    expect((await holdIn(METRICS, holdId))?.state).toBe("ACTIVE");
    await releaseHoldById({ holdId, reason: "settled", actor: DEV, nowMs: AFTER_GRACE + 1000 });
    expect((await holdIn(METRICS, holdId))?.state).toBe("RELEASED");
    expect((await holdIn(PRIMARY_CELL, holdId))?.state).toBe("RELEASED");
    await runNightlyJob(runOptions({ nowMs: AFTER_GRACE + DAY_MS, asOfMs: AFTER_GRACE + DAY_MS }));
    expect(await existsIn(METRICS, HELD_METRIC)).toBe(false);
    expect(await existsIn(METRICS, OTHER_TENANT_METRIC)).toBe(true);
    const after = await getDeletionStatusHandler({ requestId: request.requestId }, { uid: "c-2002", tenantId: null, roles: ["compliance"] }, { nowMs: AFTER_GRACE + DAY_MS, refreshMs: DAY_MS });
    expect(after.state).toBe("PURGED");
  });

  it("an interrupted placement leaves the hold of record placing; placing it again, or the nightly run, finishes it", async () => {
    // What a crash after the primary's commit leaves: the hold of record, listing its other database, and no copy.
    const { holdId } = await inCell(PRIMARY_CELL, () => placeInOneCell({ targetPath: `tenants/${TENANT}`, reasonCode: "LITIGATION", releaseAfterMs: null, actor: CLARA, nowMs: T0, cells: [METRICS] }));
    expect(await holdIn(PRIMARY_CELL, holdId)).toMatchObject({ cellsPending: true });
    expect(await holdIn(METRICS, holdId)).toBeUndefined();
    expect((await listHolds({ callerUid: "c-2002", nowMs: T0 })).items.map((h) => [h.holdId, h.databases, h.placing])).toEqual([[holdId, [PRIMARY_CELL], true]]);
    // The same officer placing the same hold again gets it back, and its placement is finished.
    expect((await placeHold({ targetPath: `tenants/${TENANT}`, reasonCode: "LITIGATION", releaseAfterMs: null, actor: CLARA, nowMs: T0 + 5000 })).holdId).toBe(holdId);
    expect(await holdIn(METRICS, holdId)).toMatchObject({ state: "ACTIVE", cellOf: PRIMARY_CELL });
    expect(await holdIn(PRIMARY_CELL, holdId)).toMatchObject({ cellsPending: false });

    // Another interrupted one, finished by the nightly run's first step (before any database purges).
    const second = await inCell(PRIMARY_CELL, () => placeInOneCell({ targetPath: `tenants/${TENANT}`, reasonCode: "REGULATOR_REQUEST", releaseAfterMs: null, actor: DEV, nowMs: T0, cells: [METRICS] }));
    expect(await resumeHoldPlacements()).toEqual([second.holdId]);
    expect(await holdIn(METRICS, second.holdId)).toMatchObject({ state: "ACTIVE", reasonCode: "REGULATOR_REQUEST" });
    expect(await resumeHoldPlacements()).toEqual([]);
  });

  it("names an unknown database as bad input and writes nothing", async () => {
    await expect(placeHold({ targetPath: `tenants/${TENANT}`, database: "nope", reasonCode: "LITIGATION", releaseAfterMs: null, actor: CLARA, nowMs: T0 })).rejects.toMatchObject({ kind: "invalid-argument", reason: "UNKNOWN_DATABASE" });
    expect((await listHolds({ callerUid: "c-2002", nowMs: T0 })).items).toEqual([]);
  });
});

describe("a tenant's closure across governed databases", () => {
  beforeEach(seed);

  it("the approval is followed in the metrics database, the export spans both, and the accounts go once both are done", async () => {
    await getAuth(adminApp()).createUser({ uid: "u-7" });
    const RITA = { type: "staff", id: "r-3001" } as const;
    const { request } = await openDeletionRequest({ subject: { type: "tenant", tenantId: TENANT }, source: "staff", reason: "contract ended", actor: RITA, nowMs: T0 });
    expect((await inCell(METRICS, () => db().doc(`deletionRequests/${request.requestId}`).get())).data()).toMatchObject({ state: "AWAITING_APPROVAL", subjectType: "tenant", cellOf: PRIMARY_CELL });
    // Nothing is hidden before the second person approves; then both databases hide the tenant's data.
    expect(readGovernedState(await inCell(METRICS, () => db().doc(HELD_METRIC).get()))).toBe("ACTIVE");
    await approveTenantClosure(request.requestId, CLARA, T0 + 1000);
    const cell = (await inCell(METRICS, () => db().doc(`deletionRequests/${request.requestId}`).get())).data();
    expect(cell).toMatchObject({ state: "PENDING", approvedBy: CLARA.id, awaitingRecord: true, softDeleteDone: true });
    expect(readGovernedState(await inCell(METRICS, () => db().doc(HELD_METRIC).get()))).toBe("SOFT_DELETED");
    expect(readGovernedState(await inCell(METRICS, () => db().doc(OTHER_TENANT_METRIC).get()))).toBe("ACTIVE");
    // The customer's export during the grace spans both databases.
    const dir = await mkdtemp(join(tmpdir(), "tenant-export-"));
    const manifest = await exportTenant({ tenantId: TENANT, outDir: join(dir, "out"), nowMs: T0 + 2000 });
    expect(manifest.files.map((f) => f.file)).toContain(`${METRICS}--tenants.metrics.jsonl`);
    expect(manifest.files.find((f) => f.file === `${METRICS}--tenants.metrics.jsonl`)).toMatchObject({ collection: `${METRICS}:tenants/{tenantId}/metrics/{metricId}`, documents: 1 });
    expect((await verifyExportDir(join(dir, "out"))).ok).toBe(true);

    const afterGrace = T0 + 31 * DAY_MS;
    await runNightlyJob(runOptions({ nowMs: afterGrace, asOfMs: afterGrace }));
    expect(await existsIn(METRICS, HELD_METRIC)).toBe(false);
    expect(await existsIn(METRICS, OTHER_TENANT_METRIC)).toBe(true);
    const record = (await db().doc(`deletionRequests/${request.requestId}`).get()).data();
    expect(record).toMatchObject({ state: "PURGED", authDeletion: { state: "DONE" } });
    await expect(getAuth(adminApp()).getUser("u-7")).rejects.toMatchObject({ code: "auth/user-not-found" });
    const accounts = (await evidenceIn(PRIMARY_CELL)).filter((e) => e.action === "AUTH_ACCOUNTS_DELETED");
    expect(accounts).toHaveLength(1);
    expect(accounts[0]?.decision).toMatchObject({ cellsDone: `${PRIMARY_CELL}:PURGED,${METRICS}:PURGED` });
    expect((await evidenceIn(METRICS)).some((e) => e.action.startsWith("AUTH_ACCOUNT"))).toBe(false);
  });
});

const readGovernedState = (snap: DocumentSnapshot): unknown => snap.get("lifecycleState");

describe("objects held with a document of the metrics database", () => {
  // A bucket belongs to no database: these charts are held with each customer's metric, a document of metrics, so
  // metrics' holds are the ones that can cover them, and its part of a request takes them (kernel/policy.ts#cellOfEntry).
  const HELD_WITH = `tenants/${TENANT}/metrics/u-7`;
  const CHART = `tenants/${TENANT}/charts/u-7/views.png`;
  const OTHER_CHART = "tenants/t-beta/charts/u-8/views.png";
  const withCharts = (): Registry => {
    const r = registryWithMetrics();
    const charts = { id: "charts", kind: "storage", bucket: "(default)", prefix: "tenants/{tenantId}/charts/{uid}/", heldWith: "tenants/{tenantId}/metrics/{uid}", action: "delete", description: "A customer's charts, held with their metric." };
    return RegistrySchema.parse({ ...r, dataMap: { ...r.dataMap, user: [...r.dataMap.user, charts] } });
  };
  const objectLinesIn = async (cell: string): Promise<string[]> =>
    (await evidenceIn(cell)).filter((e) => e.action === "PURGE_OBJECTS").flatMap((e) => String(e.detail?.objects ?? "").split("\n"));

  beforeAll(() => useRegistryForTests(withCharts()));
  afterAll(async () => {
    useRegistryForTests(registryWithMetrics());
    await clearStorage();
  });
  beforeEach(async () => {
    await seed();
    await clearStorage();
    await inCell(METRICS, () => writeGoverned(HELD_WITH, { uid: "u-7", views: 1 }, TENANT, T0));
    await putObject(defaultBucket(), CHART, "u-7's chart");
    await putObject(defaultBucket(), OTHER_CHART, "u-8's chart");
  });

  it("a hold in metrics keeps and marks them; metrics' windows and evidence delete them once after its release; the primary never lists them", async () => {
    const { request } = await openDeletionRequest({ subject: { type: "user", uid: "u-7", tenantId: TENANT }, source: "user", actor: { type: "user", id: "u-7" }, nowMs: T0 });
    const { holdId } = await placeHold({ targetPath: HELD_WITH, database: METRICS, reasonCode: "LITIGATION", releaseAfterMs: null, actor: CLARA, nowMs: T0 + 1000 });
    expect((await readObject(defaultBucket(), CHART))?.holdIds).toEqual([holdId]);
    const generation = (await readObject(defaultBucket(), CHART))!.generation;

    await runNightlyJob(runOptions({ nowMs: AFTER_GRACE, asOfMs: AFTER_GRACE }));
    expect((await readObject(defaultBucket(), CHART))?.generation).toBe(generation);
    expect((await inCell(METRICS, () => db().doc(`deletionRequests/${request.requestId}`).get())).get("state")).toBe("RETAINED_UNDER_HOLD");
    expect(await objectLinesIn(PRIMARY_CELL)).toEqual([]);
    expect((await objectLinesIn(METRICS)).every((l) => l.endsWith(`held ${holdId}`))).toBe(true);

    await releaseHoldById({ holdId, reason: "settled", actor: DEV, nowMs: AFTER_GRACE + 1000 });
    expect((await readObject(defaultBucket(), CHART))?.holdIds).toEqual([]);
    await runNightlyJob(runOptions({ nowMs: AFTER_GRACE + DAY_MS, asOfMs: AFTER_GRACE + DAY_MS }));
    expect(await readObject(defaultBucket(), CHART)).toBeNull();
    expect(await readObject(defaultBucket(), OTHER_CHART)).not.toBeNull();
    // Deleted once, in a delete window metrics opened on its own fence; the primary's chain names no object.
    const deleted = (await objectLinesIn(METRICS)).filter((l) => l.endsWith(" deleted"));
    expect(deleted).toEqual([`${objectPath(defaultBucket(), CHART)}#${generation} deleted`]);
    const windowed = (await evidenceIn(METRICS)).filter((e) => e.action === "PURGE_OBJECTS" && String(e.detail?.objects).endsWith(" deleted"));
    expect(windowed.map((e) => typeof e.detail?.window)).toEqual(["string"]);
    expect(await objectLinesIn(PRIMARY_CELL)).toEqual([]);
    const status = await getDeletionStatusHandler({ requestId: request.requestId }, { uid: "c-2002", tenantId: null, roles: ["compliance"] }, { nowMs: AFTER_GRACE + DAY_MS, refreshMs: DAY_MS });
    expect(status.state).toBe("PURGED");
  });
});
