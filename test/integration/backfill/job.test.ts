/**
 * The expiry backfill against the Firestore emulator. Each scenario seeds the same legacy data into its own
 * named database (nothing listens there, so the comparison sees the backfill's effect alone) and compares
 * the final business data of a budget-interrupted, resumed run with one uninterrupted run.
 */
import type { DocumentData } from "firebase-admin/firestore";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { COLLECTIONS, db } from "../../../functions/src/platform/firestore";
import { setMetricsTransport } from "../../../functions/src/platform/metrics";
import { JOBS } from "../../../functions/src/jobs/catalog";
import { BACKFILL_JOB_DOC, runExpiryBackfill, type ExpiryBackfillOptions } from "../../../functions/src/backfill/job";
import { clearFirestore } from "../../helpers/emulator";
import { captureMetrics, point } from "../../helpers/metrics";
import { putGoverned } from "../ttl/fixtures";

const previousDatabase = process.env.RETENTION_DATABASE_ID;
const T0 = Date.parse("2026-10-01T00:00:00Z");
const NOW = Date.parse("2026-12-01T00:00:00Z");
const BUSINESS = ["sessions", "events"];

function useDatabase(id: string): void {
  process.env.RETENTION_DATABASE_ID = id;
}

const opts = (over: Partial<ExpiryBackfillOptions> = {}): ExpiryBackfillOptions => ({
  nowMs: NOW,
  asOfMs: null,
  dryRun: false,
  actor: { type: "system", id: "test" },
  ...over,
});

/**
 * Legacy data: TTL documents written before the TTL field existed, children without their parent's
 * expiry, orphans of sessions already swept, and held documents that must never get a TTL value.
 */
async function seedLegacy(): Promise<void> {
  for (let i = 0; i < 6; i++) {
    const s = `sessions/s-${i}`;
    await putGoverned(s, { uid: `u-${i}` }, { createdAtMs: T0 + i * DAY_MS });
    await putGoverned(`${s}/tokens/t-a`, { kind: "refresh" }, { createdAtMs: T0 });
    await putGoverned(`${s}/tokens/t-b`, { kind: "access" }, { createdAtMs: T0 });
  }
  await putGoverned("sessions/s-kept", { uid: "u-k" }, { createdAtMs: T0, expireAtMs: T0 + 5 * DAY_MS });
  await putGoverned("sessions/s-kept/tokens/t-a", { kind: "refresh" }, { createdAtMs: T0 });
  for (let i = 0; i < 3; i++) {
    await putGoverned(`sessions/gone-${i}/tokens/t-orphan`, { kind: "refresh" }, { createdAtMs: T0, expireAtMs: T0 + DAY_MS });
  }
  await putGoverned("sessions/gone-held/tokens/t-held", { kind: "refresh" }, { createdAtMs: T0, legalHold: true, lifecycleState: "LEGAL_HOLD" });
  for (let i = 0; i < 5; i++) await putGoverned(`events/e-${i}`, { type: "PAGE_VIEW" }, { createdAtMs: T0 + i * 1000 });
  await putGoverned("events/e-held", { type: "X" }, { createdAtMs: T0, legalHold: true, lifecycleState: "LEGAL_HOLD", holdIds: ["h1"] });
  await putGoverned("events/e-hold-record", { type: "X" }, { createdAtMs: T0 });
  await db().collection(COLLECTIONS.retentionHolds).doc("h2").set({ state: "ACTIVE", targetPath: "events/e-hold-record", reasonCode: "LITIGATION" });
  // A legacy document with no createdAt at all: its storage create time is the anchor.
  await db().doc("events/e-no-anchor").set({ type: "Y", retentionClass: "event-90d", lifecycleState: "ACTIVE", tenantId: "t-acme", policyVersion: "v1" });
}

/** Every business document (sessions with their tokens, events) as path -> data, for comparison. */
async function businessState(): Promise<Record<string, DocumentData>> {
  const out: Record<string, DocumentData> = {};
  for (const c of BUSINESS) for (const d of (await db().collection(c).get()).docs) out[d.ref.path] = d.data();
  for (const d of (await db().collectionGroup("tokens").get()).docs) out[d.ref.path] = d.data();
  // The anchorless document's expiry depends on its storage create time, which differs per database.
  if (out["events/e-no-anchor"]) out["events/e-no-anchor"] = { ...out["events/e-no-anchor"], expireAt: "(from create time)" };
  return out;
}

describe("expiry backfill", () => {
  afterEach(() => {
    vi.restoreAllMocks();
    setMetricsTransport(null);
  });
  afterAll(() => {
    if (previousDatabase === undefined) delete process.env.RETENTION_DATABASE_ID;
    else process.env.RETENTION_DATABASE_ID = previousDatabase;
  });

  it("an uninterrupted run fixes every kind of gap, never gives a held document a TTL value, and records evidence", async () => {
    useDatabase("bf-whole");
    await clearFirestore("bf-whole");
    await seedLegacy();
    const before = await businessState();

    const dry = await runExpiryBackfill(opts({ dryRun: true }));
    expect(await businessState()).toEqual(before);
    expect((await db().collection(COLLECTIONS.retentionJobs).doc(BACKFILL_JOB_DOC).get()).exists).toBe(false);

    const summary = await runExpiryBackfill(opts());
    expect(summary).toMatchObject({ job: "expiryBackfill", done: true, stoppedBy: "PASS_COMPLETE", resumed: false });
    expect(summary).toMatchObject({ expireAtSet: 12, inheritedSet: 13, orphansDeleted: 3, heldSkipped: 3, scanned: 32 });
    // The dry run reported what the real run then did.
    expect(dry).toMatchObject({ dryRun: true, done: true, expireAtSet: 12, inheritedSet: 13, orphansDeleted: 3, heldSkipped: 3, scanned: 32 });

    const after = await businessState();
    const ms = (p: string) => (after[p]?.expireAt as { toMillis(): number } | undefined)?.toMillis();
    expect(ms("sessions/s-2")).toBe(T0 + 2 * DAY_MS + 30 * DAY_MS);
    expect(ms("sessions/s-2/tokens/t-a")).toBe(ms("sessions/s-2"));
    expect(ms("sessions/s-kept")).toBe(T0 + 5 * DAY_MS);
    expect(ms("sessions/s-kept/tokens/t-a")).toBe(T0 + 5 * DAY_MS);
    expect(ms("events/e-3")).toBe(T0 + 3000 + 90 * DAY_MS);
    expect(ms("events/e-held")).toBeUndefined();
    expect(ms("events/e-hold-record")).toBeUndefined();
    expect(after["sessions/gone-0/tokens/t-orphan"]).toBeUndefined();
    expect(after["sessions/gone-held/tokens/t-held"]).toBeDefined();

    const audits = (await db().collection(COLLECTIONS.deletionAudits).get()).docs.map((d) => d.data());
    const orphanPaths = audits.filter((a) => a.action === "ORPHAN_DELETE").flatMap((a) => a.paths as string[]);
    expect(orphanPaths.sort()).toEqual(["sessions/gone-0/tokens/t-orphan", "sessions/gone-1/tokens/t-orphan", "sessions/gone-2/tokens/t-orphan"]);
    const setPaths = audits.filter((a) => a.action === "EXPIRY_BACKFILL").flatMap((a) => a.paths as string[]);
    expect(setPaths).toHaveLength(25);
    expect(setPaths).not.toContain("events/e-held");
  });

  it("a run stopped by its budget and resumed ends in the same state as one run; a second pass changes nothing", async () => {
    useDatabase("bf-whole");
    const whole = await businessState();

    useDatabase("bf-parts");
    await clearFirestore("bf-parts");
    await seedLegacy();
    const runs = [];
    const metrics = captureMetrics();
    for (let i = 0; i < 30; i++) {
      const r = await runExpiryBackfill(opts({ maxDocs: 4, pageSize: 3 }));
      runs.push(r);
      if (r.done) break;
    }
    // One checkpoint point per run: how far the pass has come, rising to the whole pass.
    const covered = point(metrics, "retention.backfill_checkpoint") as number[];
    expect(covered).toHaveLength(runs.length);
    expect(covered.every((v, i) => i === 0 || v >= covered[i - 1]!)).toBe(true);
    expect(covered[0]).toBe(4);
    expect(point(metrics, "retention.backfill_checkpoint", { done: "true" })).toEqual([32]);
    setMetricsTransport(null);
    expect(runs.length).toBeGreaterThan(5);
    expect(runs[0]).toMatchObject({ done: false, stoppedBy: "MAX_DOCS", scanned: 4, resumed: false });
    expect(runs.slice(1).every((r) => r.resumed)).toBe(true);
    expect(runs.every((r) => (r.scanned as number) <= 4)).toBe(true);
    expect(runs.at(-1)).toMatchObject({ done: true, pass: { scanned: 32, expireAtSet: 12, inheritedSet: 13, orphansDeleted: 3 } });
    expect(await businessState()).toEqual(whole);

    const again = await runExpiryBackfill(opts());
    expect(again).toMatchObject({ done: true, resumed: false, expireAtSet: 0, inheritedSet: 0, orphansDeleted: 0 });
    expect(await businessState()).toEqual(whole);
  });

  it("counts a page that fails as a backfill error and throws; a dry run emits no metrics", async () => {
    useDatabase("bf-error");
    await clearFirestore("bf-error");
    await seedLegacy();
    const metrics = captureMetrics();
    await runExpiryBackfill(opts({ dryRun: true }));
    expect(metrics).toEqual([]);
    vi.spyOn(db(), "runTransaction").mockRejectedValueOnce(new Error("injected page failure"));
    await expect(runExpiryBackfill(opts())).rejects.toThrow("injected page failure");
    expect(point(metrics, "retention.backfill_errors")).toEqual([1]);
    expect(point(metrics, "retention.backfill_checkpoint")).toEqual([]);
    vi.restoreAllMocks();
    setMetricsTransport(null);
  });

  it("stops on its time budget, saving the cursor after every page", async () => {
    useDatabase("bf-time");
    await clearFirestore("bf-time");
    await seedLegacy();
    let t = 0;
    const clock = () => (t += 400);
    const r = await runExpiryBackfill(opts({ maxSeconds: 1, pageSize: 2, clock }));
    expect(r).toMatchObject({ done: false, stoppedBy: "MAX_SECONDS", pages: 2, scanned: 4 });
    const cp = (await db().collection(COLLECTIONS.retentionJobs).doc(BACKFILL_JOB_DOC).get()).data();
    expect(cp).toMatchObject({ done: false, phase: "events/{eventId}", after: "events/e-3" });
  });

  it("is registered in the jobs catalog as expiryBackfill", async () => {
    useDatabase("bf-catalog");
    await clearFirestore("bf-catalog");
    await putGoverned("events/e-c", { type: "X" }, { createdAtMs: T0 });
    const runner = await JOBS.expiryBackfill!();
    expect(await runner(opts())).toMatchObject({ job: "expiryBackfill", done: true, expireAtSet: 1 });
  });
});

describe("the scheduled expiryBackfill function", () => {
  const saved = { ...process.env };
  afterAll(() => {
    for (const k of ["RETENTION_DATABASE_ID", "RETENTION_BACKFILL_MAX_DOCS", "RETENTION_BACKFILL_MAX_SECONDS"]) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  });

  it("runs the job with the budget from its params, and refuses a zero budget", async () => {
    useDatabase("bf-schedule");
    await clearFirestore("bf-schedule");
    await putGoverned("events/e-s1", { type: "X" }, { createdAtMs: T0 });
    await putGoverned("events/e-s2", { type: "X" }, { createdAtMs: T0 });
    const { expiryBackfill } = await import("../../../functions/src/entrypoints/scheduled/expiry-backfill");
    const event = { scheduleTime: new Date().toISOString(), jobName: "test" };

    process.env.RETENTION_BACKFILL_MAX_SECONDS = "60";
    process.env.RETENTION_BACKFILL_MAX_DOCS = "0";
    await expect(expiryBackfill.run(event)).rejects.toThrow(/RETENTION_BACKFILL_MAX_DOCS/);

    process.env.RETENTION_BACKFILL_MAX_DOCS = "1";
    await expiryBackfill.run(event);
    const cp = (await db().collection(COLLECTIONS.retentionJobs).doc(BACKFILL_JOB_DOC).get()).data();
    expect(cp).toMatchObject({ done: false, phase: "events/{eventId}", after: "events/e-s1", passCounts: { scanned: 1, expireAtSet: 1 } });
    expect((await db().doc("events/e-s2").get()).get("expireAt")).toBeUndefined();
  });
});
