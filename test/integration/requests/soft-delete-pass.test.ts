/**
 * A subject's soft-delete pass (requests/service.ts#softDeleteSubjectData) over more documents than one batch holds:
 * every document moves once, the evidence names each once, and the request's timeline gets one entry for the pass, not
 * one per batch (a tenant of millions of documents would otherwise push its request past Firestore's 1 MiB limit).
 */
import { describe, expect, it } from "vitest";
import { openDeletionRequest } from "../../../functions/src/requests/index";
import { softDeleteSubjectData } from "../../../functions/src/requests/service";
import { db } from "../../helpers/emulator";
import { evidence, pathCounts, putCustomer, reset, T0 } from "../purge/support";

const ACTOR = { type: "staff" as const, id: "c-2001" };

/** AtlasMart's tenant t-big with two customers (over 200 documents), and its closure put in PENDING by hand. */
async function bigTenant(): Promise<{ paths: string[]; requestId: string }> {
  await reset();
  const paths = [...new Set([...(await putCustomer("u-b1", { tenantId: "t-big", messages: 190, activity: 3 })), ...(await putCustomer("u-b2", { tenantId: "t-big", messages: 40, activity: 2 }))])];
  expect(paths.length).toBeGreaterThan(200);
  await putCustomer("u-other", { tenantId: "t-acme", messages: 3, activity: 1 });
  // A closure awaiting approval has moved nothing; it is put in PENDING by hand so the pass below is the only one.
  const { request } = await openDeletionRequest({ subject: { type: "tenant", tenantId: "t-big" }, source: "staff", actor: { type: "staff", id: "ra-3001" }, nowMs: T0 });
  const ref = db().doc(`deletionRequests/${request.requestId}`);
  await ref.update({ state: "PENDING" });
  return { paths, requestId: request.requestId };
}

describe("a soft-delete pass over a subject larger than a batch", () => {
  it("moves each document once, in several batches, with one timeline entry for the pass", async () => {
    const { paths, requestId } = await bigTenant();
    const ref = db().doc(`deletionRequests/${requestId}`);
    const moved = await softDeleteSubjectData(requestId, ACTOR, T0 + 1);
    expect(moved).toBe(paths.length);
    for (const p of paths) expect((await db().doc(p).get()).get("lifecycleState"), p).toBe("SOFT_DELETED");
    expect((await db().doc("tenants/t-acme/users/u-other").get()).get("lifecycleState")).toBe("ACTIVE");

    const stored = (await ref.get()).data()!;
    expect(stored.softDeleted).toBe(paths.length);
    const softDeleted = (stored.timeline as { event: string; detail: string }[]).filter((e) => e.event === "SOFT_DELETED");
    expect(softDeleted).toEqual([expect.objectContaining({ detail: `${paths.length} documents` })]);

    // Two batches of at most 200, each with its evidence; every path named once.
    const entries = (await evidence()).filter((e) => e.action === "SUBJECT_SOFT_DELETED");
    expect(entries).toHaveLength(Math.ceil(paths.length / 200));
    const counts = pathCounts(entries, "SUBJECT_SOFT_DELETED");
    expect([...counts.keys()].sort()).toEqual([...paths].sort());
    expect([...counts.values()].every((n) => n === 1)).toBe(true);

    // A second pass finds everything moved: nothing moves, and the timeline is left as it was.
    expect(await softDeleteSubjectData(requestId, ACTOR, T0 + 2)).toBe(0);
    expect(((await ref.get()).get("timeline") as { event: string }[]).filter((e) => e.event === "SOFT_DELETED")).toHaveLength(1);
  });

  it("gathers discovery a chunk at a time, across stream segments, and still moves and names each document once", async () => {
    const { paths, requestId } = await bigTenant();
    const ref = db().doc(`deletionRequests/${requestId}`);
    // Chunks of 37 paths and descendant streams of 23 documents: every chunk and segment edge falls mid-subject.
    expect(await softDeleteSubjectData(requestId, ACTOR, T0 + 1, { chunk: 37, segment: 23 })).toBe(paths.length);
    for (const p of paths) expect((await db().doc(p).get()).get("lifecycleState"), p).toBe("SOFT_DELETED");
    expect((await db().doc("tenants/t-acme/users/u-other").get()).get("lifecycleState")).toBe("ACTIVE");

    const stored = (await ref.get()).data()!;
    expect(stored.softDeleted).toBe(paths.length);
    expect((stored.timeline as { event: string; detail: string }[]).filter((e) => e.event === "SOFT_DELETED")).toEqual([
      expect.objectContaining({ detail: `${paths.length} documents` }),
    ]);
    // A batch never spans two chunks: at least one evidence entry per chunk, each path named once over all of them.
    const entries = (await evidence()).filter((e) => e.action === "SUBJECT_SOFT_DELETED");
    expect(entries.length).toBeGreaterThanOrEqual(Math.ceil(paths.length / 37));
    const counts = pathCounts(entries, "SUBJECT_SOFT_DELETED");
    expect([...counts.keys()].sort()).toEqual([...paths].sort());
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
  });
});
