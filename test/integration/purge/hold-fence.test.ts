import { spawn } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DomainError } from "../../../functions/src/kernel/errors";
import type { PurgeHookContext, PurgeHookPoint } from "../../../functions/src/purge/runner/env";
import { runNightlyPurge, type UnitReport } from "../../../functions/src/purge/job";
import { db, waitFor } from "../../helpers/emulator";
import {
  allGovernedPaths,
  exists,
  expectChainVerifies,
  expectDeletionsExplained,
  expectHoldsFenced,
  hold,
  pathCounts,
  PURGE_TEST_DATABASE,
  putCustomer,
  requestDeletion,
  reset,
  rng,
  runOptions,
} from "./support";

/**
 * The hold fence: a hold placed at any moment of a purge stops every delete of every document it covers
 * (the document itself or any descendant) that has not already committed. Checked as an invariant on the
 * evidence, which commits with each deletion: no PURGE_BATCH names a covered path after the HOLD_PLACED
 * entry, and every covered path not deleted before the hold survives.
 */

const UID = "u-51";
const TARGETS = {
  leaf: `tenants/t-acme/orders/o-${UID}/messages/m-${UID}-3`,
  ancestor: `tenants/t-acme/orders/o-${UID}`,
  subtree: "tenants/t-acme",
  external: `activity/a-${UID}-02`,
} as const;

/** Every moment of a run a hold can land at; `inExecute` is inside the delete transaction, before it commits. */
const POINTS: PurgeHookPoint[] = ["afterLease", "afterStart", "afterMark", "beforeExecute", "inExecute", "afterExecute", "beforeLate", "beforeFinalize"];
/** Points where a batch's own paths say whether the hold matters now; at the others any moment will do. */
const PER_BATCH: readonly PurgeHookPoint[] = ["afterMark", "beforeExecute", "inExecute"];

const covers = (target: string) => (p: string) => p === target || p.startsWith(`${target}/`);

describe("the hold fence: a hold landing at any hook point of a purge", () => {
  for (const point of POINTS) {
    for (const [kind, target] of Object.entries(TARGETS)) {
      // By the time the manifest is verified, only what the erasure keeps (the tenant, the masked order) is left to hold.
      if ((point === "beforeLate" || point === "beforeFinalize") && (kind === "leaf" || kind === "external")) continue;
      it(`${kind} hold at ${point}`, async () => {
        await reset();
        await putCustomer(UID, { messages: 4, activity: 4 });
        const requestId = await requestDeletion(UID);
        const before = await allGovernedPaths();
        let placing: Promise<"placed" | "target-gone"> | null = null;
        // The batches of a step run several at a time, so this hook runs concurrently with itself. The placement
        // is claimed before the first await, or two batches would each start one, the test would await only the
        // last, and the other would commit its hold into the next test's database. A batch the hold covers that
        // arrives while another places it waits for that placement, as the placing batch does (except inside the
        // delete transaction, below): the hold lands before any batch it covers goes on.
        let claim: Promise<void> | null = null;
        const hook = async (ctx: PurgeHookContext) => {
          if (ctx.point !== point) return;
          if (PER_BATCH.includes(point) && !ctx.paths.some(covers(target))) return;
          if (claim) {
            if (point !== "inExecute") await claim;
            return;
          }
          let settle!: () => void;
          claim = new Promise<void>((resolve) => (settle = resolve));
          try {
            if (!(await exists(target))) {
              // Gone already: nothing is placed, and a later firing may try again.
              claim = null;
              return;
            }
            // Not awaited here: inside the delete transaction the placement waits for it to commit (Firestore
            // serialises the two), and awaiting it there would wait on ourselves.
            placing = hold(target).then(
              () => "placed" as const,
              (err: unknown) => {
                if (err instanceof DomainError && err.reason === "TARGET_NOT_FOUND") return "target-gone" as const;
                throw err;
              },
            );
            if (point !== "inExecute") await placing;
          } finally {
            settle();
          }
        };
        // After the first commit the target must still be there: only batches run one at a time guarantee
        // that (the other points see the batches of a step running several at a time).
        const parallelBatches = point === "afterExecute" ? 1 : 4;
        // The placement is waited for even when the run fails (its own outcome is checked below): nothing this
        // test started outlives it.
        const summary = await runNightlyPurge(runOptions({ sweep: false, batchSize: 2, parallelBatches, hook })).finally(() => placing?.catch(() => undefined));
        expect(placing, `the hook point ${point} fired with ${target} still present`).not.toBeNull();
        const placed = await placing!;
        expect((summary.units as UnitReport[]).map((u) => u.outcome)).toEqual(["DONE"]);
        const entries = await expectChainVerifies();
        const after = await allGovernedPaths();
        await expectDeletionsExplained(
          entries,
          [...before].filter((p) => !after.has(p)),
        );
        if (placed === "target-gone") {
          // Only a placement racing the very transaction that deletes its target can find it gone: Firestore
          // ordered the delete first, and the evidence records it before any hold.
          expect(point).toBe("inExecute");
          expect(pathCounts(entries, "PURGE_BATCH").get(target)).toBe(1);
          expect(entries.some((e) => e.action === "HOLD_PLACED")).toBe(false);
          return;
        }
        expect(await expectHoldsFenced(entries, before)).toBeGreaterThan(0);
        // The erasure is deferred, not reported complete, exactly when something it was to do did not happen
        // under the hold: data it was to delete survives, or the order it was to mask is not masked.
        const order = `tenants/t-acme/orders/o-${UID}`;
        const unmasked = (await db().doc(order).get()).get("maskedAt") === undefined;
        const heldBack = [...before].filter(covers(target)).filter((p) => after.has(p) && p !== "tenants/t-acme" && (p !== order || unmasked));
        expect((await db().doc(`deletionRequests/${requestId}`).get()).get("state")).toBe(heldBack.length > 0 ? "RETAINED_UNDER_HOLD" : "PURGED");
      });
    }
  }
});

/** Places holds from a separate OS process, at random moments, while this process runs a real purge. */
function placeHoldsFromAnotherProcess(targets: readonly string[], delaysMs: readonly number[]): Promise<{ target: string; holdId: string | null; error?: string }[]> {
  const script = join(__dirname, "hold-placer.ts");
  const tsx = join(process.cwd(), "node_modules", ".bin", "tsx");
  return new Promise((resolve, reject) => {
    const child = spawn(tsx, [script, JSON.stringify({ targets, delaysMs })], {
      env: { ...process.env, RETENTION_DATABASE_ID: PURGE_TEST_DATABASE },
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (b: Buffer) => (out += b.toString()));
    child.on("error", reject);
    child.on("exit", (code) => {
      if (code !== 0) return reject(new Error(`hold placer exited ${code}`));
      const line = out.trim().split("\n").filter((l) => l.startsWith("{")).pop() ?? "{}";
      resolve((JSON.parse(line) as { results: { target: string; holdId: string | null; error?: string }[] }).results);
    });
  });
}

describe("the hold fence under real concurrency", () => {
  it("holds placed by another process while a purge runs stop every covered delete (3 seeds)", async () => {
    let placedTotal = 0;
    for (let seed = 1; seed <= 3; seed++) {
      await reset();
      const uid = `u-6${seed}`;
      await putCustomer(uid, { messages: 8, activity: 8 });
      await requestDeletion(uid);
      const before = await allGovernedPaths();
      const r = rng(seed);
      const targets = [
        `tenants/t-acme/orders/o-${uid}`,
        `activity/a-${uid}-0${1 + Math.floor(r() * 6)}`,
        `tenants/t-acme/orders/o-${uid}/messages/m-${uid}-${Math.floor(r() * 8)}`,
        `activity/a-${uid}-07`,
      ];
      const delays = targets.map(() => Math.floor(r() * 3_000));
      const [results, summary] = await Promise.all([
        placeHoldsFromAnotherProcess(targets, delays),
        runNightlyPurge(runOptions({ sweep: false, batchSize: 2, owner: `concurrent-${seed}` })),
      ]);
      expect((summary.units as UnitReport[]).map((u) => u.outcome)).toEqual(["DONE"]);
      // A placement may find its target already purged (not found): that is a valid order too.
      for (const res of results) if (res.holdId === null) expect(res.error).toBe("TARGET_NOT_FOUND");
      placedTotal += results.filter((x) => x.holdId !== null).length;
      const entries = await expectChainVerifies();
      const after = await allGovernedPaths();
      await expectDeletionsExplained(entries, [...before].filter((p) => !after.has(p)));
      await expectHoldsFenced(entries, before);
    }
    expect(placedTotal).toBeGreaterThan(0);
  }, 240_000);
});

/** Where the first runner stalls: after it has chosen a batch to delete, before its delete commits. */
const STALL_POINT: PurgeHookPoint = "beforeExecute";

describe("the hold fence across a lease hand-over", () => {
  it("a stalled runner that lost its lease deletes nothing after another runner recorded a hold", async () => {
    await reset();
    await putCustomer("u-71", { messages: 4, activity: 2 });
    const requestId = await requestDeletion("u-71");
    const before = await allGovernedPaths();
    const order = "tenants/t-acme/orders/o-u-71";
    let second: Promise<unknown> | null = null;
    const stalled = await runNightlyPurge(
      runOptions({
        owner: "runner-stalled",
        sweep: false,
        batchSize: 2,
        hook: async (ctx: PurgeHookContext) => {
          // The first runner stops right before it deletes a batch of messages. Meanwhile the order above them
          // is held, its lease runs out, and a second runner takes the request over and finishes the round.
          if (second !== null || ctx.point !== STALL_POINT || !ctx.paths.some((p) => p.includes("/messages/"))) return;
          await hold(order);
          second = runNightlyPurge(runOptions({ owner: "runner-fresh", sweep: false, batchSize: 2, clock: () => Date.now() + 61_000 }));
          await second;
          await waitFor(async () => (await db().doc(`deletionRequests/${requestId}`).get()).get("lease") === undefined, "the second runner finished");
        },
      }),
    );
    expect(second).not.toBeNull();
    expect((stalled.units as UnitReport[]).map((u) => u.outcome)).toEqual(["LEASE_LOST"]);
    const entries = await expectChainVerifies();
    const after = await allGovernedPaths();
    await expectDeletionsExplained(entries, [...before].filter((p) => !after.has(p)));
    await expectHoldsFenced(entries, before);
    for (let m = 0; m < 4; m++) expect(after.has(`${order}/messages/m-u-71-${m}`), `message ${m} under the held order`).toBe(true);
    expect((await db().doc(`deletionRequests/${requestId}`).get()).get("state")).toBe("RETAINED_UNDER_HOLD");
  });
});
