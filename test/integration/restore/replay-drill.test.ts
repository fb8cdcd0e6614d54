/**
 * The restore drill: seed the demo, copy it into a second database (the "backup"), erase a user and close the
 * tenant in the original, then treat the copy as the restored database and replay the erasure ledger into it.
 */
import { DataKeys, openCopy } from "../../../functions/src/shred/index";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Timestamp } from "firebase-admin/firestore";
import { seedDemo } from "../../../examples/atlasmart/seed";
import { keyedSubjectHash } from "../../../functions/src/evidence/index";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { inDatabase } from "../../../functions/src/platform/firestore";
import { policy } from "../../../functions/src/platform/registry";
import { runNightlyPurge, type UnitReport } from "../../../functions/src/purge/index";
import { approveTenantClosure, openDeletionRequest } from "../../../functions/src/requests/index";
import { replayErasures, type ReplayReport } from "../../../functions/src/restore/index";
import { clearAuth, clearFirestore, db } from "../../helpers/emulator";
import { dumpDatabase as dump, restoreInto as snapshot } from "../../helpers/restore";
import { repoRoot } from "../../helpers/policy";
import { allGovernedPaths, expectChainVerifies, hold, runOptions, T0 } from "../purge/support";

const APP = "drill-app";
const BACKUP = "drill-backup";
const LEDGER = "drill-ledger";
const OPERATOR = { type: "staff", id: "r-3001" } as const;
/** The second person a tenant's closure needs. */
const APPROVER = { type: "staff", id: "c-2001" } as const;

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [join(repoRoot, "bin", "retention.js"), ...args], { cwd: repoRoot, env: process.env, timeout: 90_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stdout, stderr });
    });
  });
}

const PERSONAL = ["Ada Lovelace", "Ben Okafor", "1 Analytical Way"];

describe("restore drill: the erasure ledger puts a restored database right", () => {
  const previous = { db: process.env.RETENTION_DATABASE_ID, ledger: process.env.RETENTION_LEDGER_DATABASE_ID };
  let userRequest = "";
  let tenantRequest = "";
  let erasedOriginal = new Set<string>();

  beforeAll(async () => {
    process.env.RETENTION_DATABASE_ID = APP;
    process.env.RETENTION_LEDGER_DATABASE_ID = LEDGER;
    for (const d of [APP, BACKUP, LEDGER]) await clearFirestore(d);
    await clearAuth();
  });

  afterAll(() => {
    for (const [k, v] of [["RETENTION_DATABASE_ID", previous.db], ["RETENTION_LEDGER_DATABASE_ID", previous.ledger]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  it("records each erasure in the ledger, without personal data, before the request says so", async () => {
    await seedDemo({ nowMs: T0 });
    // A hold in force when the backup is taken: it travels with the backup.
    await hold("activity/a-002", T0);
    expect(await snapshot(db(APP), db(BACKUP))).toBeGreaterThan(20);

    // Erase Ada, then close the tenant, in the original.
    userRequest = (await openDeletionRequest({ subject: { type: "user", uid: "u-1001", tenantId: "t-acme" }, source: "user", actor: { type: "user", id: "u-1001" }, nowMs: T0 })).request.requestId;
    const userRun = await runNightlyPurge(runOptions({ sweep: false, nowMs: T0 + 8 * DAY_MS, asOfMs: T0 + 8 * DAY_MS }));
    expect((userRun.units as UnitReport[]).find((u) => u.unitKey === userRequest)?.outcome).toBe("DONE");
    tenantRequest = (await openDeletionRequest({ subject: { type: "tenant", tenantId: "t-acme" }, source: "staff", actor: OPERATOR, nowMs: T0 + 8 * DAY_MS })).request.requestId;
    expect((await approveTenantClosure(tenantRequest, APPROVER, T0 + 8 * DAY_MS)).request.state).toBe("PENDING");
    const tenantRun = await runNightlyPurge(runOptions({ sweep: false, nowMs: T0 + 39 * DAY_MS, asOfMs: T0 + 39 * DAY_MS }));
    expect((tenantRun.units as UnitReport[]).find((u) => u.unitKey === tenantRequest)?.outcome).toBe("DONE");
    expect((await db(APP).doc(`deletionRequests/${userRequest}`).get()).get("state")).toBe("PURGED");
    expect((await db(APP).doc(`deletionRequests/${tenantRequest}`).get()).get("state")).toBe("RETAINED_UNDER_HOLD");
    erasedOriginal = await allGovernedPaths();
    expect(erasedOriginal.has("activity/a-002")).toBe(true);
    expect(erasedOriginal.has("tenants/t-acme/users/u-1001")).toBe(false);

    const ledger = await db(LEDGER).collection("erasureLedger").get();
    expect(ledger.docs.map((d) => d.id).sort()).toEqual([userRequest, tenantRequest].sort());
    const user = ledger.docs.find((d) => d.id === userRequest)!.data();
    expect(user).toMatchObject({
      requestId: userRequest,
      subjectKind: "user",
      subjectHash: keyedSubjectHash("u-1001"),
      tenantHash: keyedSubjectHash("t-acme"),
      policyVersion: policy().version,
      masked: [{ collection: "tenants/{tenantId}/orders", fields: ["customerName", "shippingAddress"], count: 2 }],
    });
    expect((user.erasedAt as Timestamp).toMillis()).toBe(T0 + 8 * DAY_MS);
    const tenant = ledger.docs.find((d) => d.id === tenantRequest)!.data();
    expect(tenant).toMatchObject({ subjectKind: "tenant", subjectHash: keyedSubjectHash("t-acme"), tenantHash: null, masked: [] });
    // No raw id, no name, no address: only keyed hashes, collection patterns and field names.
    const text = JSON.stringify(ledger.docs.map((d) => d.data()));
    for (const raw of ["u-1001", "u-1002", "t-acme", ...PERSONAL]) expect(text).not.toContain(raw);
    // The ledger lives in its own database: the governed one has no such collection.
    expect((await db(APP).collection("erasureLedger").get()).size).toBe(0);
  });

  it("a dry run reports the erased user and the erased tenant back in the restore, and writes nothing", async () => {
    // A hold placed in the restored database only: the replay must respect the restore's holds.
    await inDatabase(BACKUP, () => hold("events/e-001", T0 + 40 * DAY_MS));
    const before = await dump(db(BACKUP));
    const report = await replayErasures({ databaseId: BACKUP, apply: false, actor: OPERATOR, nowMs: Date.now() });
    expect(report.ledgerEntries).toBe(2);
    expect(report.subjects.map((s) => [s.kind, s.uid ?? null, s.tenantId, s.requestId, s.action])).toEqual([
      ["user", "u-1001", "t-acme", userRequest, "erase"],
      ["tenant", null, "t-acme", tenantRequest, "erase"],
    ]);
    const ada = report.subjects[0]!;
    expect(ada.toMask).toBe(2);
    expect(ada.toDelete).toBeGreaterThanOrEqual(5);
    expect(report.tenantsBack).toEqual(["t-acme"]);
    expect(report.toErase).toBe(2);
    expect(await dump(db(BACKUP))).toEqual(before);

    // The CLI says the same, and exits 1 (subjects to erase).
    const run = await cli(["replay-erasures", "--database", BACKUP, "--json"]);
    expect(run.code, run.stderr).toBe(1);
    const printed = JSON.parse(run.stdout) as ReplayReport;
    expect(printed).toMatchObject({ databaseId: BACKUP, applied: false, toErase: 2, tenantsBack: ["t-acme"] });
    expect(await dump(db(BACKUP))).toEqual(before);
  });

  it("--apply erases them again through the purge: nothing erased is present or visible, masks are back, the restore's holds stand", async () => {
    const original = await dump(db(APP));
    const report = await replayErasures({ databaseId: BACKUP, apply: true, actor: OPERATOR, nowMs: Date.now(), correlationId: "drill" });
    // The replay worked on the restored copy only.
    expect(await dump(db(APP))).toEqual(original);
    expect(report.subjects.map((s) => [s.kind, s.request, s.outcome])).toEqual([
      ["user", "create", "DONE"],
      ["tenant", "create", "DONE"],
    ]);
    expect(report.problems).toBe(0);
    const restored = await inDatabase(BACKUP, () => allGovernedPaths());
    // What is left is what the original kept, plus what the restore's own hold keeps.
    expect([...restored].filter((p) => !erasedOriginal.has(p))).toEqual(["events/e-001"]);
    expect([...erasedOriginal].filter((p) => !restored.has(p))).toEqual([]);
    const store = db(BACKUP);
    for (const p of ["tenants/t-acme/users/u-1001", "userDirectory/u-1001", "activity/a-001", "sessions/s-1001", "tenants/t-acme/orders/o-1001/messages/m-001", "tenants/t-acme/users/u-1002", "userDirectory/u-1002"]) {
      expect((await store.doc(p).get()).exists, p).toBe(false);
    }
    // Ada's orders: her replay masked them again, then the tenant's closure archived them (finance records kept
    // as archive copies, as in the original) and deleted them. The copies carry the masks.
    for (const p of ["tenants/t-acme/orders/o-1001", "tenants/t-acme/orders/o-1002"]) {
      expect((await store.doc(p).get()).exists, p).toBe(false);
      const copies = await store.collection("archives").where("sourcePath", "==", p).get();
      expect(copies.size, `${p} archived in the restore`).toBe(1);
      // Sealed under the tenant's data key (decision 0038): opened with the key store the restore still shares.
      expect(copies.docs[0]!.get("data"), p).toBeUndefined();
      const opened = await inDatabase(BACKUP, () => openCopy(copies.docs[0]!.data(), copies.docs[0]!.id, new DataKeys()));
      if (!opened.ok) throw new Error(`${p}: the copy does not open (${opened.reason})`);
      const data = opened.plain as Record<string, unknown>;
      expect(data.customerName, p).toBeUndefined();
      expect(data.shippingAddress, p).toBeUndefined();
      expect(data.orderId ?? data.total ?? Object.keys(data).length, `${p}: the copy keeps the record's other fields`).toBeTruthy();
    }
    // Held in the backup (copied) and in the restore only: both still there.
    expect((await store.doc("activity/a-002").get()).exists).toBe(true);
    expect((await store.doc("events/e-001").get()).exists).toBe(true);
    expect((await store.doc(`deletionRequests/${userRequest}`).get()).get("state")).toBe("PURGED");
    expect((await store.doc(`deletionRequests/${tenantRequest}`).get()).get("state")).toBe("RETAINED_UNDER_HOLD");
    // No personal value of an erased subject is left anywhere in the restore, outside the held records.
    const all = await dump(store);
    for (const [path, data] of all) {
      if (path === "activity/a-002" || path === "events/e-001") continue;
      for (const raw of PERSONAL) expect(data, path).not.toContain(raw);
    }
    // The purge wrote its evidence into the restored database's chain, and it verifies.
    const entries = await inDatabase(BACKUP, () => expectChainVerifies());
    const actions = entries.map((e) => e.action);
    expect(actions).toContain("ERASURE_REPLAY");
    expect(actions.filter((a) => a === "ERASURE_REPLAY_OPENED")).toHaveLength(2);
    expect(actions).toContain("PURGE_VERIFIED");
    // The ledger still has one entry per erasure: the replay found them and checked them.
    expect((await db(LEDGER).collection("erasureLedger").get()).size).toBe(2);
  });

  it("a second replay changes nothing", async () => {
    const before = await dump(db(BACKUP));
    const ledgerBefore = await dump(db(LEDGER));
    const report = await replayErasures({ databaseId: BACKUP, apply: true, actor: OPERATOR, nowMs: Date.now() });
    expect(report.subjects.map((s) => [s.kind, s.action, s.outcome])).toEqual([
      ["user", "none", null],
      ["tenant", "none", null],
    ]);
    expect(report.toErase).toBe(0);
    expect(report.tenantsBack).toEqual([]);
    expect(await dump(db(BACKUP))).toEqual(before);
    expect(await dump(db(LEDGER))).toEqual(ledgerBefore);
    // And through the CLI, applied: exit 0, still nothing written.
    const run = await cli(["replay-erasures", "--database", BACKUP, "--apply", "--json", "--as", "r-3001"]);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ applied: true, toErase: 0, problems: 0 });
    expect(await dump(db(BACKUP))).toEqual(before);
  });

  it("refuses to replay into the ledger's own database", async () => {
    await expect(replayErasures({ databaseId: LEDGER, apply: false, actor: OPERATOR, nowMs: Date.now() })).rejects.toThrow(/REPLAY_INTO_LEDGER/);
    const run = await cli(["replay-erasures", "--database", LEDGER]);
    expect(run.code).toBe(2);
  });
});
