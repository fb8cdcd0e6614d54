/**
 * What Cloud Storage objects cost an erasure, and what a delete window costs a hold placement (docs/HOLD-FENCE.md,
 * "Cloud Storage objects"), on the Firestore and Storage emulators, with AtlasMart's registry (v4: a customer's
 * uploads under tenants/{tenantId}/users/{uid}/, held with their profile).
 * - An erasure of a customer with BENCH_OBJECTS uploads, against the same customer with none: wall time, windows
 *   (PURGE_OBJECTS entries) and objects per window; so the time per object.
 * - Placements, each timed from the call to its return: on an idle database under v3 (no storage entries: no window
 *   query) and under v4 (one query); while a window is open, on a target it does not cover (no wait) and on the
 *   profile it covers (waits for the window's last delete).
 * One JSON line on stdout.
 *
 *   EMULATOR_PORT_OFFSET=<n> node scripts/emulators.mjs exec --only firestore,auth,storage -- npx tsx bench/storage-window.ts
 */
import { performance } from "node:perf_hooks";
import { getStorage } from "firebase-admin/storage";
import { placeHold } from "../functions/src/holds/index";
import { RegistrySchema } from "../functions/src/kernel/policy-schema";
import { adminApp, db } from "../functions/src/platform/firestore";
import { policy, useRegistryForTests } from "../functions/src/platform/registry";
import { defaultBucket } from "../functions/src/platform/storage";
import { runNightlyPurge } from "../functions/src/purge/index";
import type { PurgeHookContext } from "../functions/src/purge/runner/env";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { FieldPath } from "firebase-admin/firestore";
import { DAY_MS } from "../functions/src/kernel/policy";
import { freshGovernedFields } from "../functions/src/kernel/governed-write";
import type { ChainedEvidence } from "../functions/src/evidence/rules";
import { governedToFirestore } from "../functions/src/platform/governed-doc";
import { settings } from "../functions/src/platform/settings";
import { openDeletionRequest } from "../functions/src/requests/index";
import type { PurgeRunOptions } from "../functions/src/purge/index";

// The purge suites' database and clock (test/integration/purge/support.ts, which imports vitest and cannot be loaded here).
process.env.RETENTION_DATABASE_ID = "storage-bench";
const T0 = Date.parse("2026-06-01T00:00:00Z");
const AFTER_GRACE = T0 + 8 * DAY_MS;
const PROJECT = process.env.GCLOUD_PROJECT ?? "demo-atlasmart-firestore";

async function reset(): Promise<void> {
  const res = await fetch(`http://${process.env.FIRESTORE_EMULATOR_HOST}/emulator/v1/projects/${PROJECT}/databases/${settings.databaseId()}/documents`, { method: "DELETE" });
  if (!res.ok) throw new Error(`clearing Firestore: ${res.status}`);
}

async function putGoverned(path: string, data: Record<string, unknown>): Promise<void> {
  const pol = policy();
  const cls = pol.classForPath(path)!;
  const createdAtMs = T0 - 5 * DAY_MS;
  await db().doc(path).set({
    ...data,
    ...governedToFirestore(freshGovernedFields(cls, { tenantId: "t-acme", policyVersion: pol.version, createdAtMs }), "set"),
  });
}

/** A customer of t-acme: profile, directory entry and `activity` records (the uploads are added separately). */
async function putCustomer(uid: string, opts: { messages: number; activity: number }): Promise<void> {
  await putGoverned("tenants/t-acme", { name: "Acme" });
  await putGoverned(`tenants/t-acme/users/${uid}`, { uid, displayName: uid });
  await putGoverned(`userDirectory/${uid}`, { uid, tenantId: "t-acme" });
  for (let a = 0; a < opts.activity; a++) await putGoverned(`activity/a-${uid}-${String(a).padStart(2, "0")}`, { subjectUid: uid, type: "SIGNED_IN" });
}

async function requestDeletion(uid: string): Promise<void> {
  await openDeletionRequest({ subject: { type: "user", uid, tenantId: "t-acme" }, source: "user", actor: { type: "user", id: uid }, nowMs: T0 });
}

const runOptions = (over: Partial<PurgeRunOptions>): PurgeRunOptions => ({ nowMs: AFTER_GRACE, asOfMs: AFTER_GRACE, dryRun: false, actor: { type: "system", id: "nightlyPurge" }, correlationId: "bench", leaseMs: 60_000, ...over });

async function evidence(): Promise<ChainedEvidence[]> {
  return (await db().collection("deletionAudits").orderBy(FieldPath.documentId()).get()).docs.map((d) => d.data() as ChainedEvidence);
}

const OBJECTS = Number(process.env.BENCH_OBJECTS ?? 200);
const PLACEMENTS = Number(process.env.BENCH_PLACEMENTS ?? 8);
const STORAGE_HOST = process.env.STORAGE_EMULATOR_HOST;
if (!STORAGE_HOST) {
  console.error("storage-window: STORAGE_EMULATOR_HOST is not set; run it inside scripts/emulators.mjs exec --only firestore,auth,storage.");
  process.exit(2);
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? null : Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!);
};
const clearStorage = async () => {
  const res = await fetch(`${STORAGE_HOST}/internal/reset`, { method: "POST" });
  if (!res.ok) throw new Error(`storage reset: ${res.status}`);
};

async function erasure(uid: string, objects: number): Promise<{ ms: number; windows: number; perWindow: number[] }> {
  await reset();
  await clearStorage();
  await putCustomer(uid, { messages: 2, activity: 2 });
  const bucket = getStorage(adminApp()).bucket(defaultBucket());
  for (let i = 0; i < objects; i++) await bucket.file(`tenants/t-acme/users/${uid}/uploads/${String(i).padStart(4, "0")}.jpg`).save(`bytes ${i}`, { resumable: false });
  await requestDeletion(uid);
  const started = performance.now();
  await runNightlyPurge(runOptions({ sweep: false, batchSize: 450 }));
  const ms = performance.now() - started;
  const windows = (await evidence()).filter((e) => e.action === "PURGE_OBJECTS");
  return { ms: Math.round(ms), windows: windows.length, perWindow: windows.map((e) => String(e.detail?.objects ?? "").split("\n").length) };
}

async function timedPlacement(target: string, nowMs: number): Promise<number> {
  const started = performance.now();
  await placeHold({ targetPath: target, reasonCode: "LITIGATION", releaseAfterMs: null, actor: { type: "staff", id: "c-2001" }, nowMs });
  return performance.now() - started;
}

async function idlePlacements(): Promise<number[]> {
  await reset();
  const out: number[] = [];
  for (let i = 0; i < PLACEMENTS; i++) {
    await putCustomer(`u-p${i}`, { messages: 0, activity: 1 });
    out.push(await timedPlacement(`activity/a-u-p${i}-00`, T0));
  }
  return out;
}

async function placementsDuringWindow(): Promise<{ uncovered: number[]; covered: number; deletesMs: number }> {
  await reset();
  await clearStorage();
  const uid = "u-w";
  await putCustomer(uid, { messages: 1, activity: PLACEMENTS });
  const bucket = getStorage(adminApp()).bucket(defaultBucket());
  for (let i = 0; i < 40; i++) await bucket.file(`tenants/t-acme/users/${uid}/uploads/${i}.jpg`).save(`bytes ${i}`, { resumable: false });
  await requestDeletion(uid);
  const uncovered: number[] = [];
  let covered = 0;
  let deletesFrom = 0;
  let deletesMs = 0;
  await runNightlyPurge(
    runOptions({
      sweep: false,
      batchSize: 450,
      hook: async (ctx: PurgeHookContext) => {
        if (ctx.point === "afterObjectDeletes" && deletesMs === 0) deletesMs = performance.now() - deletesFrom;
        if (ctx.point !== "inObjectWindow" || deletesFrom > 0) return;
        // Holds on documents the window does not cover: one transaction, no wait.
        for (let i = 0; i < PLACEMENTS; i++) uncovered.push(await timedPlacement(`activity/a-${uid}-${String(i).padStart(2, "0")}`, AFTER_GRACE));
        // The profile the window's objects are held with: it waits for the window's deletes (which run once this
        // hook returns), so it is placed beside them.
        void timedPlacement(`tenants/t-acme/users/${uid}`, AFTER_GRACE).then((ms) => {
          covered = ms;
        });
        for (;;) {
          const held = await db().collection("retentionHolds").where("targetPath", "==", `tenants/t-acme/users/${uid}`).get();
          if (!held.empty) break;
          await new Promise((r) => setTimeout(r, 5));
        }
        deletesFrom = performance.now();
      },
    }),
  );
  while (covered === 0) await new Promise((r) => setTimeout(r, 20));
  return { uncovered, covered: Math.round(covered), deletesMs: Math.round(deletesMs) };
}

async function main(): Promise<void> {
  const withObjects = await erasure("u-o1", OBJECTS);
  const without = await erasure("u-o2", 0);
  // Alternating v3 (no storage entries) and v4 (storage entries), so neither is measured on a colder or busier emulator.
  const v3 = RegistrySchema.parse(JSON.parse(readFileSync(join(import.meta.dirname, "..", "policies", "versions", "v3.json"), "utf8")));
  const v4: number[] = [];
  const idleV3: number[] = [];
  for (let round = 0; round < 3; round++) {
    useRegistryForTests(v3);
    idleV3.push(...(await idlePlacements()));
    useRegistryForTests(undefined);
    v4.push(...(await idlePlacements()));
  }
  const during = await placementsDuringWindow();
  process.stdout.write(
    `${JSON.stringify({
      policy: policy().version,
      objects: OBJECTS,
      erasure: { withObjectsMs: withObjects.ms, withoutObjectsMs: without.ms, windows: withObjects.windows, objectsPerWindow: withObjects.perWindow, msPerObject: Math.round(((withObjects.ms - without.ms) / OBJECTS) * 10) / 10 },
      placement: {
        idleV3NoStorage: { p50: pct(idleV3, 50), p95: pct(idleV3, 95) },
        idleV4Storage: { p50: pct(v4, 50), p95: pct(v4, 95) },
        duringWindowUncovered: { p50: pct(during.uncovered, 50), p95: pct(during.uncovered, 95) },
        duringWindowCoveredWaited: during.covered,
        windowDeletesOf40Objects: during.deletesMs,
      },
    })}\n`,
  );
  await db().terminate();
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
