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
import { placeHold } from "../../../functions/src/holds/service";

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

  it("gathers discovery a chunk at a time, across subtree pages, and still moves and names each document once", async () => {
    const { paths, requestId } = await bigTenant();
    const ref = db().doc(`deletionRequests/${requestId}`);
    // Chunks of 37 paths and subtree pages of 23 documents: every chunk and page edge falls mid-subject.
    expect(await softDeleteSubjectData(requestId, ACTOR, T0 + 1, { chunk: 37, page: 23 })).toBe(paths.length);
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

  it("reads the holds again for each chunk: a hold placed during the pass keeps what it covers, before its flags land", async () => {
    const { paths, requestId } = await bigTenant();
    const target = "tenants/t-big/orders/o-u-b2";
    const covered = paths.filter((p) => p.startsWith(`${target}/`));
    let activeAtHold: string[] = [];
    const beforeChunk = async (chunk: number): Promise<void> => {
      if (chunk !== 1) return;
      // A document hold whose descendants' flags are never set here (its flagging left to a task that has not run):
      // only its record protects the order's messages.
      await placeHold({ targetPath: target, reasonCode: "LITIGATION", releaseAfterMs: null, actor: { type: "staff", id: "c-2001" }, nowMs: T0 + 1 }, () => Promise.resolve());
      const states = await Promise.all(covered.map(async (p) => [p, (await db().doc(p).get()).get("lifecycleState")] as const));
      activeAtHold = states.filter(([, st]) => st === "ACTIVE").map(([p]) => p);
    };
    await softDeleteSubjectData(requestId, ACTOR, T0 + 2, { chunk: 37, page: 23, beforeChunk });
    // The hold landed before any of the order's messages moved, and none of them moved after it.
    expect(activeAtHold).toEqual(covered);
    for (const p of covered) {
      const d = (await db().doc(p).get()).data()!;
      expect(d.lifecycleState, p).toBe("ACTIVE");
      expect(d.legalHold, p).not.toBe(true);
    }
    expect((await db().doc(target).get()).get("lifecycleState")).toBe("LEGAL_HOLD");
    const others = paths.filter((p) => p !== target && !covered.includes(p));
    for (const p of others) expect((await db().doc(p).get()).get("lifecycleState"), p).toBe("SOFT_DELETED");
  });
});
