import { describe, expect, it } from "vitest";
import type { PurgeHookContext } from "../../../functions/src/purge/runner/env";
import { runNightlyPurge } from "../../../functions/src/purge/job";
import { db } from "../../helpers/emulator";
import {
  allGovernedPaths,
  expectChainVerifies,
  expectDeletionsExplained,
  hold,
  InjectedCrash,
  putCustomer,
  putGoverned,
  putSession,
  requestDeletion,
  reset,
  rng,
  runOptions,
} from "./support";

const SEEDS = 24;
const LEASE_MS = 60_000;

/**
 * One scenario per seed: a customer in the deletion workflow (nested messages, external copies, a masked
 * order), an expired session with its token, an expired event, an expired audit record (archive first),
 * and held data (a held message of the customer, a held expired event). Each run crashes at a random hook
 * call (a batch boundary, or between a delete and its record); the next runner takes over once the lease
 * has expired, until a run completes.
 */
async function scenario(seed: number): Promise<{ requestId: string; held: string[]; expectedGone: string[] }> {
  await reset();
  const r = rng(seed);
  const messages = 2 + Math.floor(r() * 4);
  const activity = 1 + Math.floor(r() * 4);
  await putCustomer("u-7", { messages, activity });
  await putCustomer("u-8", { messages: 1, activity: 1 });
  await putSession("s-7", "u-7", 1);
  await putSession("s-old", "u-8", 45);
  await putGoverned("events/e-old", { type: "PAGE_VIEW" }, { ageDays: 120 });
  await putGoverned("events/e-held", { type: "PAGE_VIEW" }, { ageDays: 120 });
  await putGoverned("events/e-new", { type: "PAGE_VIEW" }, { ageDays: 1 });
  await putGoverned("auditRecords/ar-old", { action: "EXPORT", actorUid: "u-8" }, { ageDays: 2600 });
  const heldMessage = `tenants/t-acme/orders/o-u-7/messages/m-u-7-${Math.floor(r() * messages)}`;
  await hold(heldMessage);
  await hold("events/e-held");
  const requestId = await requestDeletion("u-7");
  const expectedGone = [
    "tenants/t-acme/users/u-7",
    ...Array.from({ length: messages }, (_, m) => `tenants/t-acme/orders/o-u-7/messages/m-u-7-${m}`).filter((p) => p !== heldMessage),
    "userDirectory/u-7",
    ...Array.from({ length: activity }, (_, a) => `activity/a-u-7-${String(a).padStart(2, "0")}`),
    "sessions/s-7",
    "sessions/s-7/tokens/tk-s-7",
    "sessions/s-old",
    "sessions/s-old/tokens/tk-s-old",
    "events/e-old",
    "auditRecords/ar-old",
  ];
  return { requestId, held: [heldMessage, "events/e-held"], expectedGone };
}

describe("crash safety: crashes injected at random batch boundaries", () => {
  it(`every rerun completes, no held document is deleted, every deletion is recorded once (${SEEDS} seeds)`, async () => {
    let totalCrashes = 0;
    const crashPoints = new Set<string>();
    for (let seed = 1; seed <= SEEDS; seed++) {
      const { requestId, held, expectedGone } = await scenario(seed);
      const before = await allGovernedPaths();
      const r = rng(seed * 7919);
      let completed = false;
      for (let attempt = 0; attempt < 40 && !completed; attempt++) {
        // Each rerun is a new runner whose clock is past the crashed runner's lease.
        const offset = attempt * (LEASE_MS + 1_000);
        // At most one crash per run, at a random hook call: a run shorter than the draw completes.
        const target = 1 + Math.floor(r() * 30);
        let calls = 0;
        const hook = (ctx: PurgeHookContext) => {
          if (++calls === target) {
            const where = `${ctx.point}:${ctx.unitKey}:${ctx.batch ?? "-"}`;
            crashPoints.add(ctx.point);
            throw new InjectedCrash(where);
          }
        };
        try {
          await runNightlyPurge(
            runOptions({ owner: `runner-${seed}-${attempt}`, clock: () => Date.now() + offset, leaseMs: LEASE_MS, hook, nowMs: runOptions().nowMs + attempt * 60_000 }),
          );
          const req = (await db().doc(`deletionRequests/${requestId}`).get()).data()!;
          const sweeps = await Promise.all(["sessions", "events", "auditRecords"].map((c) => db().doc(`retentionJobs/purge-sweep-${c}`).get()));
          // One of the customer's messages is held: all else erased, the request waits for the hold.
          completed = req.state === "RETAINED_UNDER_HOLD" && sweeps.every((s) => s.get("phase") === "DONE");
        } catch (err) {
          const crash = err instanceof InjectedCrash || (err as Error).cause instanceof InjectedCrash;
          if (!crash) throw err;
          totalCrashes++;
        }
      }
      expect(completed, `seed ${seed} completes`).toBe(true);
      const after = await allGovernedPaths();
      const gone = [...before].filter((p) => !after.has(p)).sort();
      expect(gone, `seed ${seed}`).toEqual([...expectedGone].sort());
      for (const h of held) expect(after.has(h), `seed ${seed}: held ${h} survives`).toBe(true);
      const entries = await expectChainVerifies();
      await expectDeletionsExplained(entries, expectedGone);
    }
    // The injected faults did hit, and at many different points.
    expect(totalCrashes).toBeGreaterThanOrEqual(SEEDS);
    expect(crashPoints.size).toBeGreaterThanOrEqual(5);
    console.info(`crash-safety: ${SEEDS} seeds, ${totalCrashes} injected crashes at ${[...crashPoints].sort().join(", ")}`);
  }, 600_000);
});

