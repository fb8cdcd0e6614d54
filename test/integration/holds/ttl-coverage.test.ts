/**
 * Firestore's TTL sweeper obeys no hold record, only a cleared TTL field: a hold clears the TTL value of
 * everything it covers (descendants of a document hold included), and a release gives it back only where no
 * other active hold claims the document. The suite runs on a test registry with a TTL class under a holdable
 * parent: carrier tracking events under an order (`tenants/{t}/orders/{o}/tracking/{id}`, 30 days by TTL).
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { Timestamp } from "firebase-admin/firestore";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { scanRetention } from "../../../functions/src/audit/scan";
import { applyHoldFlags, placeHold, releaseHoldById } from "../../../functions/src/holds/service";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { useRegistryForTests } from "../../../functions/src/platform/registry";
import { db } from "../../helpers/emulator";
import { withOrderTracking } from "../../helpers/policy";
import { expectChainVerifies, PURGE_TEST_DATABASE, putCustomer, putGoverned, reset, T0 } from "../purge/support";

const PLACER = { type: "staff" as const, id: "c-2001" };
const RELEASER = { type: "staff" as const, id: "c-2002" };
const ORDER = "tenants/t-acme/orders/o-u-1";
const TR1 = `${ORDER}/tracking/tr-1`;
const TR2 = `${ORDER}/tracking/tr-2`;
const noApply = (): Promise<void> => Promise.resolve();

const place = (targetPath: string, apply?: (id: string) => Promise<void>) =>
  placeHold({ targetPath, reasonCode: "LITIGATION", releaseAfterMs: null, actor: PLACER, nowMs: T0 }, apply).then((h) => h.holdId);
const release = (holdId: string, opts?: Parameters<typeof releaseHoldById>[1]) => releaseHoldById({ holdId, reason: "case closed", actor: RELEASER, nowMs: T0 + DAY_MS }, opts);

/** What a document says about its hold and its TTL value. */
async function marks(path: string) {
  const d = (await db().doc(path).get()).data()!;
  return { legalHold: d.legalHold as boolean, holdIds: d.holdIds as string[], expireAt: d.expireAt instanceof Timestamp ? d.expireAt.toMillis() : null };
}

/** Unheld, with the class's own TTL value back (30 days from its anchor, a day before T0). */
const restored = { legalHold: false, holdIds: [], expireAt: T0 - DAY_MS + 30 * DAY_MS };
const heldBy = (...ids: string[]) => ({ legalHold: true, holdIds: [...ids].sort(), expireAt: null });

const auditFindings = async (code: "HOLD_WITH_TTL" | "HOLD_MARK_STALE") =>
  (await scanRetention({ nowMs: T0, skipSubjects: true })).findings
    .filter((f) => f.code === code)
    .map((f) => f.path)
    .sort();
const holdWithTtl = () => auditFindings("HOLD_WITH_TTL");

/**
 * Releases `holdId` from a separate OS process (hold-releaser.ts). Resolves `ready` once the child has loaded its
 * modules (so the two releases really overlap), and `done` with its outcome.
 */
function releaseFromAnotherProcess(holdId: string, batchSize: number, delayMs: number): { ready: Promise<void>; done: Promise<{ released: number }> } {
  const script = join(__dirname, "hold-releaser.ts");
  const tsx = join(process.cwd(), "node_modules", ".bin", "tsx");
  const child = spawn(tsx, [script, JSON.stringify({ holdId, batchSize, delayMs, nowMs: T0 + DAY_MS })], {
    env: { ...process.env, RETENTION_DATABASE_ID: PURGE_TEST_DATABASE },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  let signalReady = (): void => undefined;
  const ready = new Promise<void>((r) => (signalReady = r));
  child.stdout.on("data", (b: Buffer) => {
    out += b.toString();
    if (out.includes("ready\n")) signalReady();
  });
  const done = new Promise<{ released: number }>((resolve, reject) => {
    child.on("error", reject);
    child.on("exit", (code) => {
      if (code !== 0) return reject(new Error(`hold releaser exited ${code}`));
      resolve(JSON.parse(out.trim().split("\n").filter((l) => l.startsWith("{")).pop() ?? "{}") as { released: number });
    });
  });
  // An exit before "ready" must fail the test, not leave it waiting.
  done.then(signalReady, signalReady);
  return { ready, done };
}

describe("TTL never beats a hold: a TTL class under a holdable parent", () => {
  beforeAll(() => useRegistryForTests(withOrderTracking()));
  afterAll(() => useRegistryForTests(undefined));

  beforeEach(async () => {
    await reset();
    await putCustomer("u-1", { messages: 1, activity: 1 });
    for (const p of [TR1, TR2]) await putGoverned(p, { carrier: "DHL", status: "IN_TRANSIT" }, { ageDays: 1 });
    expect(await marks(TR1)).toEqual(restored);
  });

  it("a document hold on the order clears the TTL value of its tracking events, the audit sees them held until it does, and a release gives it back", async () => {
    const holdId = await place(ORDER, noApply);
    // Held through the parent before its flagging reached them: the audit reports each one.
    expect(await holdWithTtl()).toEqual([TR1, TR2]);
    expect(await applyHoldFlags(holdId)).toBe("APPLIED");
    for (const p of [ORDER, `${ORDER}/messages/m-u-1-0`, TR1, TR2]) expect(await marks(p), p).toMatchObject({ legalHold: true, holdIds: [holdId], expireAt: null });
    expect(await holdWithTtl()).toEqual([]);
    expect((await db().doc(`retentionHolds/${holdId}`).get()).data()).toMatchObject({ applied: true, affected: 4 });

    await release(holdId);
    for (const p of [TR1, TR2]) expect(await marks(p), p).toEqual(restored);
    expect((await db().doc(`retentionHolds/${holdId}`).get()).data()).toMatchObject({ state: "RELEASED", releasedCount: 4 });
    await expectChainVerifies();
  });

  it("two overlapping document holds, one released: the other keeps the TTL value off", async () => {
    const onOrder = await place(ORDER);
    const onTracking = await place(TR1);
    expect(await marks(TR1)).toEqual(heldBy(onOrder, onTracking));
    await release(onTracking);
    expect(await marks(TR1)).toEqual(heldBy(onOrder));
    expect(await holdWithTtl()).toEqual([]);
    await release(onOrder);
    expect(await marks(TR1)).toEqual(restored);
    expect(await marks(TR2)).toEqual(restored);
  });

  it("a subtree hold whose flagging has not reached a document keeps it held when another hold on it is released", async () => {
    const tenant = await place("tenants/t-acme", noApply);
    const onTracking = await place(TR1);
    await release(onTracking);
    // The tenant's hold covers it and its flagging will get there: it takes that hold's id now.
    expect(await marks(TR1)).toEqual(heldBy(tenant));
    expect(await marks(TR2)).toEqual(restored);
    expect(await holdWithTtl()).toEqual([TR2]);
    expect(await applyHoldFlags(tenant)).toBe("APPLIED");
    expect(await marks(TR2)).toEqual(heldBy(tenant));
    expect(await holdWithTtl()).toEqual([]);
    await release(tenant);
    for (const p of [TR1, TR2]) expect(await marks(p), p).toEqual(restored);
  });

  it("an interrupted release still claims what it has not reached; resumed, it lets go of it", async () => {
    const tenant = await place("tenants/t-acme");
    const onTracking = await place(TR1);
    // The tenant's release stops after its first batch (the tenant document and its first descendants).
    let batches = 0;
    const crash = (): Promise<void> => (++batches === 2 ? Promise.reject(new Error("worker lost")) : Promise.resolve());
    await expect(release(tenant, { batchSize: 2, afterList: crash })).rejects.toThrow("worker lost");
    expect((await db().doc(`retentionHolds/${tenant}`).get()).data()).toMatchObject({ state: "ACTIVE", releasing: true, unflagging: { phase: "documents" } });
    await release(onTracking);
    // Its walk had not reached the tracking event: the tenant's hold still claims it, no TTL value.
    expect(await marks(TR1)).toEqual(heldBy(tenant));
    expect(await holdWithTtl()).toEqual([]);
    // A TTL value on a document the stalled release still claims is reported, audit after audit: nothing resumes such a
    // release by itself, and it is still a hold. Only its marks made the audit see it before; without them it is the
    // record's claim (not "being released") that keeps the finding standing.
    const asFlagged = (await db().doc(TR2).get()).data()!;
    await db().doc(TR2).update({ expireAt: Timestamp.fromMillis(T0 + 30 * DAY_MS), legalHold: false, holdIds: [], lifecycleState: "ACTIVE" });
    expect(await holdWithTtl()).toEqual([TR2]);
    expect(await holdWithTtl()).toEqual([TR2]);
    await db().doc(TR2).set(asFlagged);
    // Released again, the walk resumes from its cursor and finishes.
    expect((await release(tenant)).released).toBeGreaterThan(0);
    for (const p of [TR1, TR2]) expect(await marks(p), p).toEqual(restored);
    expect((await db().doc(`retentionHolds/${tenant}`).get()).get("state")).toBe("RELEASED");
    await expectChainVerifies();
  });

  /**
   * A document created under a hold being released, after the release listed a batch and before that batch's
   * transaction, in the range the batch passes (`inBatch`) or past the last name of the last batch (`pastEnd`).
   * Another hold's flagging gives it the releasing hold's id (its walk had not reached it), and that hold's
   * release leaves it with that id alone. The releasing walk must not pass it with the id still on it.
   */
  for (const [where, created, batchSize] of [
    ["inside the range a batch passes", `${ORDER}/tracking/tr-0`, 3],
    ["past the last name the walk lists", `${ORDER}/tracking/tr-3`, 10],
  ] as const) {
    it(`a document created ${where} while a release's batch is in flight never keeps the released hold's id`, async () => {
      const onOrder = await place(ORDER);
      let done = false;
      const meanwhile = async () => {
        if (done) return;
        done = true;
        await putGoverned(created, { carrier: "DHL", status: "IN_TRANSIT" }, { ageDays: 1 });
        const tenant = await place("tenants/t-acme");
        await release(tenant);
      };
      await release(onOrder, { batchSize, afterList: meanwhile });
      expect((await db().doc(`retentionHolds/${onOrder}`).get()).get("state")).toBe("RELEASED");
      for (const p of [TR1, TR2, created]) expect(await marks(p), p).toEqual(restored);
      await expectChainVerifies();
    });
  }

  it("two overlapping holds released at the same time: every document they covered gets its TTL value back and keeps no id", async () => {
    const tenant = await place("tenants/t-acme");
    const onOrder = await place(ORDER);
    await Promise.all([release(tenant, { batchSize: 2 }), release(onOrder, { batchSize: 1 })]);
    for (const id of [tenant, onOrder]) expect((await db().doc(`retentionHolds/${id}`).get()).get("state")).toBe("RELEASED");
    for (const p of [TR1, TR2]) expect(await marks(p), p).toEqual(restored);
    for (const p of [ORDER, `${ORDER}/messages/m-u-1-0`, "tenants/t-acme/users/u-1"]) expect(await marks(p), p).toMatchObject({ legalHold: false, holdIds: [] });
    await expectChainVerifies();
  });

  it("two overlapping holds released by two processes at once: every document gets its TTL value back, and the audit finds no id left behind (3 timings)", async () => {
    for (const delayMs of [0, 60, 200]) {
      await reset();
      await putCustomer("u-1", { messages: 1, activity: 1 });
      for (const p of [TR1, TR2]) await putGoverned(p, { carrier: "DHL", status: "IN_TRANSIT" }, { ageDays: 1 });
      const tenant = await place("tenants/t-acme");
      const onOrder = await place(ORDER);
      const other = releaseFromAnotherProcess(onOrder, 1, delayMs);
      await other.ready;
      const [, theirs] = await Promise.all([release(tenant, { batchSize: 2 }), other.done]);
      expect(theirs.released, `delay ${delayMs}`).toBeGreaterThan(0);
      for (const id of [tenant, onOrder]) expect((await db().doc(`retentionHolds/${id}`).get()).get("state"), `delay ${delayMs}`).toBe("RELEASED");
      for (const p of [TR1, TR2]) expect(await marks(p), `${p}, delay ${delayMs}`).toEqual(restored);
      for (const p of [ORDER, `${ORDER}/messages/m-u-1-0`, "tenants/t-acme/users/u-1"]) expect(await marks(p), `${p}, delay ${delayMs}`).toMatchObject({ legalHold: false, holdIds: [] });
      expect(await auditFindings("HOLD_MARK_STALE"), `delay ${delayMs}`).toEqual([]);
      expect(await holdWithTtl(), `delay ${delayMs}`).toEqual([]);
      await expectChainVerifies();
    }
  });

  it("a hold whose release walk is past the documents (at the objects) no longer claims them: another release lets them go", async () => {
    // The order hold's release has passed every document and stands at the Storage objects (AtlasMart's data map
    // has storage entries) when the tenant's release settles the tracking events. Seen with two suites sharing the
    // machine: the order hold's id came back on them after its walk, and they stayed held with no TTL value.
    const tenant = await place("tenants/t-acme");
    const onOrder = await place(ORDER);
    await db().doc(`retentionHolds/${onOrder}`).update({ releasing: true, unflagging: { phase: "objects", cursor: null, sourceCursor: null, count: 0, objects: 0, vanished: 0 } });
    for (const p of [TR1, TR2]) await db().doc(p).update({ holdIds: [tenant] });
    await release(tenant);
    for (const p of [TR1, TR2]) expect(await marks(p), p).toEqual(restored);
    // The order hold's release then ends: had it claimed them again, they would keep its id, the audit's HOLD_MARK_STALE.
    await release(onOrder);
    expect(await auditFindings("HOLD_MARK_STALE")).toEqual([]);
  });

  it("an audit that runs while a release is under way reports nothing for what the release has given back", async () => {
    const onOrder = await place(ORDER);
    expect(await holdWithTtl()).toEqual([]);
    let seen: string[] | null = null;
    // The release settles one document per batch, in name order: when it lists TR2, TR1 has its TTL value back while
    // the record still covers it (it is being released). The audit read the hold as active before its scan.
    await release(onOrder, {
      batchSize: 1,
      afterList: async (names) => {
        if (seen === null && names.includes(TR2)) {
          expect(await marks(TR1)).toEqual(restored);
          seen = await holdWithTtl();
        }
      },
    });
    expect(seen).toEqual([]);
    expect(await holdWithTtl()).toEqual([]);
  });

  it("a hold placed while a release's batches run keeps what it covers held", async () => {
    const tenant = await place("tenants/t-acme");
    let second = "";
    const placeSecond = async () => {
      if (second === "") second = await place(ORDER);
    };
    await release(tenant, { batchSize: 2, afterList: placeSecond });
    for (const p of [ORDER, TR1, TR2]) expect(await marks(p), p).toMatchObject(heldBy(second));
    expect((await marks("tenants/t-acme/users/u-1")).legalHold).toBe(false);
    expect(await holdWithTtl()).toEqual([]);
    await expectChainVerifies();
  });
});
