/**
 * The real delete triggers, running in the Functions emulator. The emulator never sweeps, so each test
 * stands in for the sweeper with a plain delete of an expired document, which fires the same trigger.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { ttlTriggerTargets } from "../../../functions/src/ttl/rules";
import { handleTtlDeleted } from "../../../functions/src/entrypoints/firestore/ttl-deleted";
import { policy } from "../../../functions/src/platform/registry";
import { runNightlyPurge } from "../../../functions/src/purge/job";
import type { PurgeHook } from "../../../functions/src/purge/runner/env";
import { clearFirestore, db, waitFor } from "../../helpers/emulator";
import { chainHeadSeq, deleteEvent, evidenceByPath, existing, markersByPath, putExpiredSession, putGoverned } from "./fixtures";

const sessions = ttlTriggerTargets(policy()).find((t) => t.name === "sessions")!;

describe("TTL delete triggers (Functions emulator)", () => {
  beforeAll(async () => {
    await clearFirestore();
  });

  it("a sweeper delete of an expired session removes its tokens once, with one marker and one TTL_DELETE", async () => {
    const tokens = await putExpiredSession("s-real-1", 3);
    const before = await db().doc("sessions/s-real-1").get();
    await db().doc("sessions/s-real-1").delete();

    const [marker] = await waitFor(async () => {
      const m = await markersByPath("sessions/s-real-1");
      return m.length > 0 && m[0]!.get("state") === "DONE" ? m : null;
    }, "the trigger's DONE marker");
    const eventId = marker!.id;
    expect(marker!.data()).toMatchObject({ classification: "SWEEPER", childrenRemoved: 3, childrenKept: 0, trigger: "ttlDeleted-sessions" });
    // The marker carries its own TTL value: the registry's redelivery window (7 days) from processing.
    const markerExpiry = (marker!.get("expireAt") as { toMillis(): number }).toMillis();
    expect(markerExpiry - (marker!.get("updatedAt") as { toMillis(): number }).toMillis()).toBe(7 * DAY_MS);

    const evidence = await evidenceByPath("sessions/s-real-1");
    expect(evidence).toHaveLength(1);
    expect(evidence[0]).toMatchObject({
      action: "TTL_DELETE",
      eventId,
      // The deleted session, then each token the trigger removed.
      paths: ["sessions/s-real-1", ...tokens],
      counts: { childrenRemoved: 3, childrenKept: 0, childrenNamed: 3, childPages: 0 },
      decision: { reason: "SWEEPER", retentionClass: "session-30d" },
      policyVersion: policy().version,
      actor: { type: "system", id: "ttlDeleted-sessions" },
    });
    expect(JSON.stringify(evidence[0])).not.toContain("u-1001");
    expect(await existing(tokens)).toEqual([]);

    // The same event delivered ten more times (Eventarc redelivers at least once) changes nothing: a token
    // that appeared since stays, no marker or evidence is added, and the chain does not move.
    await db().doc("sessions/s-real-1/tokens/late").set({ kind: "late" });
    const seq = await chainHeadSeq();
    for (let i = 0; i < 10; i++) {
      const r = await handleTtlDeleted(sessions, deleteEvent(before, eventId, { sessionId: "s-real-1" }));
      expect(r.outcome).toBe("DUPLICATE");
      expect(r.writes).toBe(0);
    }
    expect(await markersByPath("sessions/s-real-1")).toHaveLength(1);
    expect(await evidenceByPath("sessions/s-real-1")).toHaveLength(1);
    expect(await chainHeadSeq()).toBe(seq);
    expect(await existing(["sessions/s-real-1/tokens/late"])).toEqual(["sessions/s-real-1/tokens/late"]);
  });

  it("an event with a TTL value is swept with three writes of bookkeeping and no children", async () => {
    await putGoverned("events/e-real-1", { type: "PAGE_VIEW" }, { expireAtMs: Date.now() - 1000 });
    await db().doc("events/e-real-1").delete();
    const [entry] = await waitFor(async () => {
      const e = await evidenceByPath("events/e-real-1");
      return e.length > 0 ? e : null;
    }, "TTL_DELETE evidence for the event");
    expect(entry).toMatchObject({ action: "TTL_DELETE", counts: { childrenRemoved: 0, childrenKept: 0 }, decision: { retentionClass: "event-90d" } });
    expect(await markersByPath("events/e-real-1")).toHaveLength(1);
  });

  it("deleting a held document that carries a stray TTL value is recorded as an incident, and its children stay", async () => {
    await putGoverned(
      "events/e-held-1",
      { type: "CHECKOUT_STARTED" },
      { expireAtMs: Date.now() - DAY_MS, legalHold: true, lifecycleState: "LEGAL_HOLD", holdIds: ["h-incident"] },
    );
    await db().doc("events/e-held-1/notes/n1").set({ note: "kept for review" });
    await db().doc("events/e-held-1").delete();
    const [entry] = await waitFor(async () => {
      const e = await evidenceByPath("events/e-held-1");
      return e.length > 0 ? e : null;
    }, "incident evidence");
    expect(entry).toMatchObject({
      action: "TTL_DELETE_HELD_INCIDENT",
      holdId: "h-incident",
      decision: { reason: "HELD_TTL_INCIDENT" },
      counts: { childrenRemoved: 0 },
    });
    expect(await existing(["events/e-held-1/notes/n1"])).toEqual(["events/e-held-1/notes/n1"]);
  });

  it("a delete before expiry is recorded as UNEXPLAINED_DELETE and still clears the orphans", async () => {
    const tokens = await putExpiredSession("s-early-1", 2, Date.now() + 10 * DAY_MS);
    await db().doc("sessions/s-early-1").delete();
    const [entry] = await waitFor(async () => {
      const e = await evidenceByPath("sessions/s-early-1");
      return e.length > 0 ? e : null;
    }, "unexplained-delete evidence");
    expect(entry).toMatchObject({ action: "UNEXPLAINED_DELETE", counts: { childrenRemoved: 2 } });
    expect(await existing(tokens)).toEqual([]);
  });

  it("a purge's own deletes get no entry from the trigger; a marked session a script deleted before its batch ran gets UNEXPLAINED_DELETE", async () => {
    const expireAtMs = Date.now() + 10 * DAY_MS;
    await putExpiredSession("s-real-purged", 2, expireAtMs);
    await putExpiredSession("s-real-script", 0, expireAtMs);
    // The sweep runs as of a day after the expiry and marks both; a script deletes one right after the mark.
    const hook: PurgeHook = async (ctx) => {
      if (ctx.point === "afterMark" && ctx.paths.includes("sessions/s-real-script")) await db().doc("sessions/s-real-script").delete();
    };
    const asOf = expireAtMs + DAY_MS;
    await runNightlyPurge({ nowMs: asOf, asOfMs: asOf, dryRun: false, actor: { type: "system", id: "nightlyPurge" }, correlationId: "ttl-trigger", batchSize: 10, leaseMs: 60_000, hook });
    expect(await existing(["sessions/s-real-purged", "sessions/s-real-script"])).toEqual([]);

    const [unexplained] = await waitFor(async () => {
      const e = (await evidenceByPath("sessions/s-real-script")).filter((x) => x.action === "UNEXPLAINED_DELETE");
      return e.length > 0 ? e : null;
    }, "UNEXPLAINED_DELETE for the script's delete");
    expect(String(unexplained!.detail?.markedBy)).toMatch(/^sweep-sessions\//);
    // The purge's delete fired the same trigger, at the same time: a sentinel deleted after it has its entry,
    // and the purged session has none but the purge's own.
    await putExpiredSession("s-real-sentinel", 0);
    await db().doc("sessions/s-real-sentinel").delete();
    await waitFor(async () => ((await evidenceByPath("sessions/s-real-sentinel")).length > 0 ? true : null), "the sentinel's TTL_DELETE");
    await new Promise((r) => setTimeout(r, 2000));
    expect((await evidenceByPath("sessions/s-real-purged")).map((e) => e.action).sort()).toEqual(["PURGE_BATCH", "PURGE_ELIGIBLE_MARKED"]);
    expect(await markersByPath("sessions/s-real-purged")).toHaveLength(0);
  });

  it("the suites' reset fires no trigger: clearFirestore lets the TTL triggers finish before the emulator's reset", async () => {
    // The emulator's reset fires a delete event per document it removes; triggers arriving after it would write into
    // the next test's data (test/helpers/triggers.ts). After clearFirestore, nothing of the sessions may come back.
    await putExpiredSession("s-reset-1", 2);
    await putExpiredSession("s-reset-2", 0);
    await clearFirestore();
    const written = async () =>
      (await db().collection("processedEvents").count().get()).data().count + (await db().collection("deletionAudits").count().get()).data().count;
    // A reset's events reached the triggers within 2.5 s when measured on an idle machine; 5 s gives a slow one room.
    await new Promise((r) => setTimeout(r, 5_000));
    expect(await written()).toBe(0);
  });
});
