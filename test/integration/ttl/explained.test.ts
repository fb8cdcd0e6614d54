/**
 * Which deletes the TTL trigger leaves to the purge: only those a committed purge batch explains. A real
 * policy sweep marks and deletes sessions here; the test keeps each marked document's last snapshot (the
 * `afterMark` hook), and delivers the delete events to the handler in-process, as the trigger would get them.
 * Runs on a named database no trigger listens on, so the real triggers cannot answer the same deletes.
 */
import { countOperations, counts, resetCounts } from "../../../bench/lib.mjs";
import type { DocumentSnapshot } from "firebase-admin/firestore";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { ttlTriggerTargets } from "../../../functions/src/ttl/rules";
import { handleTtlDeleted } from "../../../functions/src/entrypoints/firestore/ttl-deleted";
import { runNightlyPurge, type PurgeRunOptions } from "../../../functions/src/purge/job";
import type { PurgeHook } from "../../../functions/src/purge/runner/env";
import { COLLECTIONS } from "../../../functions/src/platform/firestore";
import { policy } from "../../../functions/src/platform/registry";
import { clearFirestore, db } from "../../helpers/emulator";
import { deleteEvent, evidenceByPath, existing, markersByPath, putExpiredSession, putGoverned } from "./fixtures";

const DATABASE = "ttl-explained";
const previousDatabase = process.env.RETENTION_DATABASE_ID;
const sessions = ttlTriggerTargets(policy()).find((t) => t.name === "sessions")!;

/** The policy sweep, as of `nowMs`, keeping the last snapshot of every document it marks; `act` runs after the mark. */
async function sweepAt(nowMs: number, act: (marked: DocumentSnapshot) => Promise<void> = () => Promise.resolve()): Promise<Map<string, DocumentSnapshot>> {
  const marked = new Map<string, DocumentSnapshot>();
  const hook: PurgeHook = async (ctx) => {
    if (ctx.point !== "afterMark") return;
    for (const path of ctx.paths) {
      const snap = await db().doc(path).get();
      if (snap.get("lifecycleState") !== "PURGE_ELIGIBLE" || marked.has(path)) continue;
      marked.set(path, snap);
      await act(snap);
    }
  };
  const opts: PurgeRunOptions = {
    nowMs,
    asOfMs: nowMs,
    dryRun: false,
    actor: { type: "system", id: "nightlyPurge" },
    correlationId: "ttl-explained",
    batchSize: 10,
    leaseMs: 60_000,
    hook,
  };
  await runNightlyPurge(opts);
  return marked;
}

const sessionParams = (path: string) => ({ sessionId: path.split("/")[1]! });

async function ttlEvidence(path: string) {
  return (await evidenceByPath(path)).filter((e) => !String(e.action).startsWith("PURGE_"));
}

describe("TTL trigger: a delete is the purge's only when a committed batch explains it", () => {
  beforeAll(() => {
    process.env.RETENTION_DATABASE_ID = DATABASE;
  });
  afterAll(() => {
    if (previousDatabase === undefined) delete process.env.RETENTION_DATABASE_ID;
    else process.env.RETENTION_DATABASE_ID = previousDatabase;
  });
  beforeEach(async () => {
    await clearFirestore(DATABASE);
  });

  it("the purge's own deletes write nothing, even when a hold on the path lands after the batch committed", async () => {
    await putExpiredSession("s-pg-1", 2);
    await putExpiredSession("s-pg-2", 0);
    const marked = await sweepAt(Date.now());
    expect([...marked.keys()].sort()).toEqual(["sessions/s-pg-1", "sessions/s-pg-2"]);
    expect(await existing([...marked.keys(), "sessions/s-pg-1/tokens/tk-000"])).toEqual([]);
    expect((await evidenceByPath("sessions/s-pg-1")).map((e) => e.action)).toContain("PURGE_BATCH");
    // A hold placed after the purge committed: the delete came first (the batch read the hold fence), so it
    // is no incident.
    await db().collection("retentionHolds").doc("h-after").set({ state: "ACTIVE", targetPath: "sessions/s-pg-1", reasonCode: "LITIGATION" });

    // Counted on the wire, as billed: the marker and the batch's one PURGE_BATCH entry, and no write.
    countOperations();
    for (const [path, snap] of marked) {
      resetCounts();
      const r = await handleTtlDeleted(sessions, deleteEvent(snap, `evt-${snap.id}`, sessionParams(path)));
      expect({ reads: counts.reads, writes: counts.writes, deletes: counts.deletes }, path).toEqual({ reads: 2, writes: 0, deletes: 0 });
      expect(r, path).toMatchObject({ outcome: "WORKFLOW_SKIPPED", classification: "WORKFLOW", writes: 0 });
      expect(await markersByPath(path)).toHaveLength(0);
      expect(await ttlEvidence(path)).toEqual([]);
    }
  });

  it("a marked document deleted by a script before its batch ran is UNEXPLAINED_DELETE, naming the batch that marked it", async () => {
    const expireAtMs = Date.now() + 10 * DAY_MS;
    await putExpiredSession("s-script", 0, expireAtMs);
    // The sweep runs as of a time after the expiry, so it marks the session; the script deletes it now, first.
    const marked = await sweepAt(expireAtMs + DAY_MS, async (snap) => {
      await snap.ref.delete();
    });
    const snap = marked.get("sessions/s-script")!;
    const batch = String(snap.get("purgeDecision.batch"));
    // The batch found it gone: its PURGE_BATCH entry does not name it.
    expect((await evidenceByPath("sessions/s-script")).map((e) => e.action)).toEqual(["PURGE_ELIGIBLE_MARKED", "PURGE_OBSERVED_GONE"]);

    const r = await handleTtlDeleted(sessions, deleteEvent(snap, "evt-script-1", sessionParams(snap.ref.path)));
    expect(r).toMatchObject({ outcome: "PROCESSED", classification: "UNEXPLAINED" });
    expect(await ttlEvidence("sessions/s-script")).toMatchObject([
      { action: "UNEXPLAINED_DELETE", eventId: "evt-script-1", paths: ["sessions/s-script"], decision: { reason: "UNEXPLAINED" }, detail: { markedBy: `sweep-sessions/${batch}` } },
    ]);
    expect(await markersByPath("sessions/s-script")).toHaveLength(1);
  });

  it("a marked document the sweeper takes after its expiry, before its batch ran, is the sweeper's TTL_DELETE", async () => {
    await putExpiredSession("s-race", 0);
    const marked = await sweepAt(Date.now(), async (snap) => {
      await snap.ref.delete();
    });
    const snap = marked.get("sessions/s-race")!;
    const r = await handleTtlDeleted(sessions, deleteEvent(snap, "evt-race-1", sessionParams(snap.ref.path)));
    expect(r).toMatchObject({ outcome: "PROCESSED", classification: "SWEEPER" });
    expect(await ttlEvidence("sessions/s-race")).toMatchObject([{ action: "TTL_DELETE", decision: { reason: "SWEEPER" } }]);
  });

  it("a marked document held when a script deletes it is a held incident: TTL_DELETE_HELD_INCIDENT with a TTL value, HELD_DELETE_INCIDENT without", async () => {
    await putExpiredSession("s-held", 0);
    const marked = await sweepAt(Date.now(), async (snap) => {
      await snap.ref.delete();
    });
    await db().collection("retentionHolds").doc("h-held").set({ state: "ACTIVE", targetPath: "sessions/s-held", reasonCode: "LITIGATION" });
    const snap = marked.get("sessions/s-held")!;
    const r = await handleTtlDeleted(sessions, deleteEvent(snap, "evt-held-1", sessionParams(snap.ref.path)));
    // The session still carried its TTL value: the held incident of a TTL'd document.
    expect(r).toMatchObject({ outcome: "PROCESSED", classification: "HELD_TTL_INCIDENT" });
    expect(await ttlEvidence("sessions/s-held")).toMatchObject([{ action: "TTL_DELETE_HELD_INCIDENT", holdId: "h-held" }]);

    // Without a TTL value (a marked document of a request's erasure, say), the held delete incident.
    const data = { ...snap.data(), expireAt: null };
    await db().doc("sessions/s-held-2").set(data);
    const copy = await db().doc("sessions/s-held-2").get();
    await copy.ref.delete();
    await db().collection("retentionHolds").doc("h-held-2").set({ state: "ACTIVE", targetPath: "sessions/s-held-2", reasonCode: "LITIGATION" });
    const r2 = await handleTtlDeleted(sessions, deleteEvent(copy, "evt-held-2", sessionParams(copy.ref.path)));
    expect(r2).toMatchObject({ outcome: "PROCESSED", classification: "HELD_DELETE_INCIDENT" });
    expect(await ttlEvidence("sessions/s-held-2")).toMatchObject([{ action: "HELD_DELETE_INCIDENT", holdId: "h-held-2" }]);
  });

  it("a marked copy re-created after the purge deleted it, then deleted, is not the purge's", async () => {
    await putExpiredSession("s-copy", 0);
    const marked = await sweepAt(Date.now());
    const original = marked.get("sessions/s-copy")!;
    expect(await existing(["sessions/s-copy"])).toEqual([]);
    // Restored from a copy, mark and all, and deleted again by a script.
    await db().doc("sessions/s-copy").set(original.data()!);
    const restored = await db().doc("sessions/s-copy").get();
    await restored.ref.delete();

    const r = await handleTtlDeleted(sessions, deleteEvent(restored, "evt-copy-1", sessionParams("sessions/s-copy")));
    expect(r.outcome).toBe("PROCESSED");
    expect(r.classification).not.toBe("WORKFLOW");
    expect((await ttlEvidence("sessions/s-copy")).map((e) => e.action)).toEqual(["TTL_DELETE"]);
    // The purge's own delete of the original still writes nothing.
    expect((await handleTtlDeleted(sessions, deleteEvent(original, "evt-copy-0", sessionParams("sessions/s-copy")))).outcome).toBe("WORKFLOW_SKIPPED");
  });

  it("a marked session the app writes afresh (its mark gone) before its batch runs: the purge's delete of it is still one the trigger leaves to the purge", async () => {
    const path = "sessions/s-rewritten";
    await putExpiredSession("s-rewritten", 0);
    let rewritten = false;
    let last: DocumentSnapshot | null = null;
    const hook: PurgeHook = async (ctx) => {
      if (!ctx.paths.includes(path)) return;
      if (ctx.point === "afterMark" && !rewritten) {
        rewritten = true;
        // The app's own write of the whole session: the mark is not in its data any more.
        await putGoverned(path, { uid: "u-1001", rewritten: true }, { expireAtMs: Date.now() - DAY_MS });
      }
      if (ctx.point === "beforeExecute") last = await db().doc(path).get();
    };
    for (let night = 0; night < 3 && (await existing([path])).length > 0; night++) {
      await runNightlyPurge({ nowMs: Date.now(), asOfMs: Date.now(), dryRun: false, actor: { type: "system", id: "nightlyPurge" }, correlationId: `ttl-rewritten-${night}`, batchSize: 10, leaseMs: 60_000, hook });
    }
    expect(rewritten).toBe(true);
    expect(await existing([path])).toEqual([]);
    const snap = last as DocumentSnapshot | null;
    expect(snap?.exists).toBe(true);
    const r = await handleTtlDeleted(sessions, deleteEvent(snap!, "evt-rewritten-1", sessionParams(path)));
    expect(r).toMatchObject({ outcome: "WORKFLOW_SKIPPED", classification: "WORKFLOW" });
    expect(await ttlEvidence(path)).toEqual([]);
  });

  it("a PURGE_BATCH entry written without the evidence key explains nothing", async () => {
    await putExpiredSession("s-forged", 0, Date.now() + 10 * DAY_MS);
    const snapBefore = await db().doc("sessions/s-forged").get();
    const batch = "p1xforged000-own-d01-000000";
    await snapBefore.ref.update({ lifecycleState: "PURGE_ELIGIBLE", purgeDecision: { unitKey: "sweep-sessions", round: 1, batch } });
    const marked = await snapBefore.ref.get();
    await marked.ref.delete();
    // A database writer's entry: the right shape, a later commit, but no MAC under the evidence key.
    await db()
      .collection(COLLECTIONS.deletionAudits)
      .doc("s9999-000000000001")
      .set({ shard: "s9999", seq: 1, action: "PURGE_BATCH", paths: ["sessions/s-forged"], detail: { batch, unitKey: "sweep-sessions" }, hash: "0".repeat(64), prevHash: "0".repeat(64), mac: "f".repeat(64), keyId: "0".repeat(16) });

    const r = await handleTtlDeleted(sessions, deleteEvent(marked, "evt-forged-1", sessionParams("sessions/s-forged")));
    expect(r).toMatchObject({ outcome: "PROCESSED", classification: "UNEXPLAINED" });
    expect((await ttlEvidence("sessions/s-forged")).map((e) => e.action)).toEqual(["UNEXPLAINED_DELETE"]);
  });
});
