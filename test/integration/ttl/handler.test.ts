/**
 * The delete handler called directly with synthetic events, to deliver one event many times, concurrently,
 * and with faults injected. These tests run against a named database that no trigger listens on, so the
 * real triggers (registered on the governed default database) cannot act on the same deletes.
 */
import { countOperations, counts, resetCounts } from "../../../bench/lib.mjs";
import type { Timestamp } from "firebase-admin/firestore";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import type { ChainedEvidence } from "../../../functions/src/evidence/rules";
import { ttlTriggerTargets } from "../../../functions/src/ttl/rules";
import { handleTtlDeleted } from "../../../functions/src/entrypoints/firestore/ttl-deleted";
import { log } from "../../../functions/src/platform/logs";
import { policy } from "../../../functions/src/platform/registry";
import { setMetricsTransport } from "../../../functions/src/platform/metrics";
import { clearFirestore, db } from "../../helpers/emulator";
import { captureMetrics, point } from "../../helpers/metrics";
import { chainHeadSeq, deleteEvent, evidenceByPath, existing, markersByPath, putExpiredSession, putGoverned } from "./fixtures";

const DATABASE = "ttl-handler";
const previousDatabase = process.env.RETENTION_DATABASE_ID;
const targets = ttlTriggerTargets(policy());
const sessions = targets.find((t) => t.name === "sessions")!;
const events = targets.find((t) => t.name === "events")!;

class InjectedFault extends Error {}

/** The TTL_CHILDREN_DELETED entries of one event, in page order. */
async function childrenEntries(eventId: string): Promise<ChainedEvidence[]> {
  const snap = await db().collection("deletionAudits").where("eventId", "==", eventId).where("action", "==", "TTL_CHILDREN_DELETED").get();
  return snap.docs.map((d) => d.data() as ChainedEvidence).sort((a, b) => (a.counts?.page ?? 0) - (b.counts?.page ?? 0));
}

/** Deletes a stored document the way the sweeper would and returns the event the trigger would get. */
async function sweep(path: string, id: string, params: Record<string, string>) {
  const snap = await db().doc(path).get();
  expect(snap.exists).toBe(true);
  await db().doc(path).delete();
  return deleteEvent(snap, id, params);
}

describe("TTL delete handler: redelivery, faults and paging", () => {
  beforeAll(() => {
    process.env.RETENTION_DATABASE_ID = DATABASE;
  });
  afterAll(() => {
    if (previousDatabase === undefined) delete process.env.RETENTION_DATABASE_ID;
    else process.env.RETENTION_DATABASE_ID = previousDatabase;
  });
  afterEach(() => {
    setMetricsTransport(null);
  });
  beforeEach(async () => {
    await clearFirestore(DATABASE);
    vi.restoreAllMocks();
  });

  it("runs against the named database", () => {
    expect(db().databaseId).toBe(DATABASE);
  });

  it("the same event delivered 10 times, in sequence and at once, has exactly one effect", async () => {
    const tokens = await putExpiredSession("s-dup", 2);
    const expireAtMs = ((await db().doc("sessions/s-dup").get()).get("expireAt") as Timestamp).toMillis();
    const event = await sweep("sessions/s-dup", "evt-dup-1", { sessionId: "s-dup" });
    const metrics = captureMetrics();

    const concurrent = await Promise.allSettled(Array.from({ length: 5 }, () => handleTtlDeleted(sessions, event)));
    // A delivery that lost every transaction retry would fail and be redelivered; model that by retrying.
    const outcomes = await Promise.all(concurrent.map((r) => (r.status === "fulfilled" ? Promise.resolve(r.value) : handleTtlDeleted(sessions, event))));
    for (let i = 0; i < 5; i++) outcomes.push(await handleTtlDeleted(sessions, event));

    expect(outcomes).toHaveLength(10);
    expect(outcomes.filter((o) => o.outcome === "PROCESSED")).toHaveLength(1);
    expect(outcomes.filter((o) => o.outcome === "DUPLICATE")).toHaveLength(9);
    const processed = outcomes.find((o) => o.outcome === "PROCESSED")!;
    expect(processed).toMatchObject({ classification: "SWEEPER", childrenRemoved: 2, writes: 2 + 3 });

    const markers = await markersByPath("sessions/s-dup");
    expect(markers.map((m) => m.id)).toEqual(["evt-dup-1"]);
    expect(markers[0]!.get("state")).toBe("DONE");
    const evidence = await evidenceByPath("sessions/s-dup");
    expect(evidence).toHaveLength(1);
    expect(evidence[0]).toMatchObject({ action: "TTL_DELETE", eventId: "evt-dup-1", paths: ["sessions/s-dup", ...tokens], counts: { childrenRemoved: 2, childrenNamed: 2, childPages: 0 } });
    expect(await chainHeadSeq()).toBe(1);
    expect(await existing(tokens)).toEqual([]);
    // Metrics follow the effect: one deletion and one lag point, and every suppressed delivery is a retry.
    expect(point(metrics, "retention.ttl_deletions", { class: "session-30d", classification: "SWEEPER" })).toEqual([1]);
    const lag = point(metrics, "retention.ttl_cleanup_lag_ms", { class: "session-30d" });
    expect(lag).toHaveLength(1);
    expect(lag[0]).toBe(Date.parse(event.time) - expireAtMs);
    expect(point(metrics, "retention.trigger_retries", { trigger: "ttlDeleted-sessions" })).toEqual(Array(9).fill(1));
    // A concurrent delivery that lost every transaction retry failed (and was delivered again above).
    expect(point(metrics, "retention.trigger_failures")).toHaveLength(concurrent.filter((r) => r.status === "rejected").length);
  });

  it("a fault between the marker and the effect leaves neither behind, and the retry completes", async () => {
    const tokens = await putExpiredSession("s-fault", 2);
    const event = await sweep("sessions/s-fault", "evt-fault-1", { sessionId: "s-fault" });
    let reached = 0;
    const fault = () => {
      reached++;
      throw new InjectedFault("crash after the marker write was queued");
    };

    const metrics = captureMetrics();
    await expect(handleTtlDeleted(sessions, event, { beforeCommit: fault })).rejects.toBeInstanceOf(InjectedFault);
    expect(reached).toBe(1);
    expect(point(metrics, "retention.trigger_failures", { trigger: "ttlDeleted-sessions" })).toEqual([1]);
    expect(point(metrics, "retention.ttl_deletions")).toEqual([]);
    expect(await markersByPath("sessions/s-fault")).toHaveLength(0);
    expect(await existing(tokens)).toEqual(tokens);
    expect(await evidenceByPath("sessions/s-fault")).toHaveLength(0);
    expect(await chainHeadSeq()).toBe(0);

    const retry = await handleTtlDeleted(sessions, event);
    expect(retry).toMatchObject({ outcome: "PROCESSED", childrenRemoved: 2 });
    expect(await markersByPath("sessions/s-fault")).toHaveLength(1);
    expect(await existing(tokens)).toEqual([]);
    expect(await evidenceByPath("sessions/s-fault")).toHaveLength(1);
    expect((await handleTtlDeleted(sessions, event)).outcome).toBe("DUPLICATE");
  });

  it("many children are removed page by page; a crash mid-way resumes from the marker's cursor and counts every child once", async () => {
    const tokens = await putExpiredSession("s-many", 7);
    const event = await sweep("sessions/s-many", "evt-many-1", { sessionId: "s-many" });
    let pagesCommitted = 0;
    const crashOnSecondPage = (stage: "page" | "final") => {
      if (stage === "page" && ++pagesCommitted === 2) throw new InjectedFault("crash on the second page");
    };

    await expect(handleTtlDeleted(sessions, event, { pageSize: 3, beforeCommit: crashOnSecondPage })).rejects.toBeInstanceOf(InjectedFault);
    // The first page committed with its cursor; the second did not. No evidence until the last page.
    const [partial] = await markersByPath("sessions/s-many");
    expect(partial!.data()).toMatchObject({ state: "IN_PROGRESS", childrenRemoved: 3 });
    expect(await existing(tokens)).toHaveLength(4);
    expect(await evidenceByPath("sessions/s-many")).toHaveLength(0);

    // An IN_PROGRESS marker never suppresses the redelivery.
    const retry = await handleTtlDeleted(sessions, event, { pageSize: 3 });
    expect(retry).toMatchObject({ outcome: "PROCESSED", childrenRemoved: 7 });
    expect(await existing(tokens)).toEqual([]);
    const evidence = await evidenceByPath("sessions/s-many");
    expect(evidence).toHaveLength(1);
    expect(evidence[0]).toMatchObject({ counts: { childrenRemoved: 7, childrenNamed: 1, childPages: 2 }, paths: ["sessions/s-many", tokens[6]] });
    expect((await markersByPath("sessions/s-many"))[0]!.get("state")).toBe("DONE");
    // Every child is named once, in the entry committed with its delete: a page's entry of its own before the
    // last page (the crashed page's entry went with its deletes), and the delete's entry for the last.
    const pages = await childrenEntries("evt-many-1");
    expect(pages.map((e) => e.paths)).toEqual([tokens.slice(0, 3), tokens.slice(3, 6)]);
    expect(pages.map((e) => e.counts)).toEqual([
      { childrenRemoved: 3, childrenKept: 0, page: 0 },
      { childrenRemoved: 3, childrenKept: 0, page: 1 },
    ]);
    expect(pages.every((e) => e.detail?.parentPath === "sessions/s-many" && e.decision.reason === "SWEEPER")).toBe(true);
    const named = [...pages.flatMap((e) => e.paths ?? []), ...(evidence[0]!.paths ?? []).slice(1)];
    expect(named.sort()).toEqual([...tokens].sort());
  });

  it("deliveries of one event racing page by page name every child exactly once, with pages numbered without a gap", async () => {
    const tokens = await putExpiredSession("s-race-pages", 11);
    const event = await sweep("sessions/s-race-pages", "evt-race-pages", { sessionId: "s-race-pages" });
    const settled = await Promise.allSettled(Array.from({ length: 3 }, () => handleTtlDeleted(sessions, event, { pageSize: 2 })));
    // A delivery that gave up on contention is redelivered, as Eventarc would.
    for (const r of settled) if (r.status === "rejected") await handleTtlDeleted(sessions, event, { pageSize: 2 });
    expect(await existing(tokens)).toEqual([]);
    const final = (await evidenceByPath("sessions/s-race-pages")).filter((e) => e.action === "TTL_DELETE");
    expect(final).toHaveLength(1);
    const pages = await childrenEntries("evt-race-pages");
    expect(pages.map((e) => e.counts?.page)).toEqual(pages.map((_, i) => i));
    expect(final[0]!.counts).toMatchObject({ childrenRemoved: 11, childPages: pages.length });
    const named = [...pages.flatMap((e) => e.paths ?? []), ...(final[0]!.paths ?? []).slice(1)];
    expect(named.sort()).toEqual([...tokens].sort());
  });

  it("a resumed delete finds its place even after an emptied subcollection stops being listed", async () => {
    const tokens = await putExpiredSession("s-two", 3);
    const extras = ["sessions/s-two/extras/x1", "sessions/s-two/extras/x2"];
    for (const p of extras) await db().doc(p).set({ n: 1 });
    const event = await sweep("sessions/s-two", "evt-two-1", { sessionId: "s-two" });
    let commits = 0;
    const crashOnSecondCommit = () => {
      if (++commits === 2) throw new InjectedFault("crash on the second (last) page");
    };

    // Page 1 empties `extras` and takes the first token; the crash loses page 2.
    await expect(handleTtlDeleted(sessions, event, { pageSize: 3, beforeCommit: crashOnSecondCommit })).rejects.toBeInstanceOf(InjectedFault);
    expect(await existing([...extras, ...tokens])).toEqual(tokens.slice(1));
    expect((await db().doc("sessions/s-two").listCollections()).map((c) => c.id)).toEqual(["tokens"]);

    const retry = await handleTtlDeleted(sessions, event, { pageSize: 3 });
    expect(retry).toMatchObject({ outcome: "PROCESSED", childrenRemoved: 5 });
    expect(await existing([...extras, ...tokens])).toEqual([]);
    // Page 1's entry names what page 1 removed; the delete's entry names the rest.
    expect((await childrenEntries("evt-two-1")).map((e) => e.paths)).toEqual([[...extras, tokens[0]]]);
    expect((await evidenceByPath("sessions/s-two"))[0]).toMatchObject({ paths: ["sessions/s-two", ...tokens.slice(1)], counts: { childrenNamed: 2, childPages: 1 } });
  });

  it("a held document with a stray TTL value: incident evidence, an ERROR log, and its children untouched", async () => {
    const errors = vi.spyOn(log, "error");
    await putGoverned("events/e-held", { type: "X" }, { expireAtMs: Date.now() - 1000, legalHold: true, lifecycleState: "LEGAL_HOLD", holdIds: ["h-1"] });
    await db().doc("events/e-held/notes/n1").set({ n: 1 });
    const event = await sweep("events/e-held", "evt-held-1", { eventId: "e-held" });

    const r = await handleTtlDeleted(events, event);
    expect(r).toMatchObject({ outcome: "PROCESSED", classification: "HELD_TTL_INCIDENT", childrenRemoved: 0 });
    expect(await evidenceByPath("events/e-held")).toEqual([expect.objectContaining({ action: "TTL_DELETE_HELD_INCIDENT", holdId: "h-1" })]);
    expect(errors).toHaveBeenCalledWith("ttl.delete.held_incident", expect.objectContaining({ eventId: "evt-held-1", action: "TTL_DELETE_HELD_INCIDENT" }));
    expect(await existing(["events/e-held/notes/n1"])).toEqual(["events/e-held/notes/n1"]);
  });

  it("an active hold record covering the document makes it an incident even without the flag", async () => {
    await putGoverned("events/e-rec", { type: "X" }, { expireAtMs: Date.now() - 1000 });
    await db().collection("retentionHolds").doc("h-rec").set({ state: "ACTIVE", targetPath: "events/e-rec", reasonCode: "LITIGATION" });
    const r = await handleTtlDeleted(events, await sweep("events/e-rec", "evt-rec-1", { eventId: "e-rec" }));
    expect(r.classification).toBe("HELD_TTL_INCIDENT");
    expect(await evidenceByPath("events/e-rec")).toEqual([expect.objectContaining({ action: "TTL_DELETE_HELD_INCIDENT", holdId: "h-rec" })]);
  });

  it("PURGE_ELIGIBLE alone explains nothing: a marked document no committed batch deleted is recorded, and its children go, each named", async () => {
    const tokens = await putExpiredSession("s-marked", 2, Date.now() + 10 * 86_400_000);
    await db().doc("sessions/s-marked").update({ lifecycleState: "PURGE_ELIGIBLE", purgeDecision: { unitKey: "sweep-sessions", round: 1, batch: "p1xabc-own-d01-000000" } });
    const r = await handleTtlDeleted(sessions, await sweep("sessions/s-marked", "evt-marked-1", { sessionId: "s-marked" }));
    expect(r).toMatchObject({ outcome: "PROCESSED", classification: "UNEXPLAINED", childrenRemoved: 2 });
    expect(await evidenceByPath("sessions/s-marked")).toMatchObject([
      { action: "UNEXPLAINED_DELETE", paths: ["sessions/s-marked", ...tokens], detail: { markedBy: "sweep-sessions/p1xabc-own-d01-000000" } },
    ]);
    expect(await markersByPath("sessions/s-marked")).toHaveLength(1);
    expect(await existing(tokens)).toEqual([]);
  });

  it("a parent re-created before the event is processed keeps its new children", async () => {
    await putExpiredSession("s-again", 1);
    const event = await sweep("sessions/s-again", "evt-again-1", { sessionId: "s-again" });
    await putExpiredSession("s-again", 1, Date.now() + 30 * 86_400_000);
    const r = await handleTtlDeleted(sessions, event);
    expect(r).toMatchObject({ outcome: "PROCESSED", childrenRemoved: 0 });
    expect(await existing(["sessions/s-again/tokens/tk-000"])).toEqual(["sessions/s-again/tokens/tk-000"]);
    expect((await evidenceByPath("sessions/s-again"))[0]).toMatchObject({ detail: { parentRecreated: true } });
  });

  it("measures the writes of each kind of TTL delete, from the commits on the wire", async () => {
    // The same counter the bench uses: writes and deletes of the commits that succeeded, as Firestore bills them.
    countOperations();
    const committed = async (work: () => Promise<unknown>): Promise<number> => {
      resetCounts();
      await work();
      return counts.writes + counts.deletes;
    };
    await putGoverned("events/e-w", { type: "X" }, { expireAtMs: Date.now() - 1000 });
    const evSweep = await sweep("events/e-w", "evt-w-1", { eventId: "e-w" });
    const ev = await committed(() => handleTtlDeleted(events, evSweep));
    await putExpiredSession("s-w1", 1);
    const s1Sweep = await sweep("sessions/s-w1", "evt-w-2", { sessionId: "s-w1" });
    const s1 = await committed(() => handleTtlDeleted(sessions, s1Sweep));
    await putExpiredSession("s-w0", 0);
    const s0Sweep = await sweep("sessions/s-w0", "evt-w-3", { sessionId: "s-w0" });
    const s0 = await committed(() => handleTtlDeleted(sessions, s0Sweep));
    // A redelivery commits nothing.
    const again = await committed(() => handleTtlDeleted(events, evSweep));
    // The head moved once per processed delete: each wrote exactly one evidence entry.
    expect(await chainHeadSeq()).toBe(3);
    // N children deleted + the marker + the evidence entry + the chain head: N + 3.
    expect({ event: ev, sessionWithOneToken: s1, sessionWithoutTokens: s0, redelivery: again }).toEqual({
      event: 3,
      sessionWithOneToken: 4,
      sessionWithoutTokens: 3,
      redelivery: 0,
    });
  });
});
