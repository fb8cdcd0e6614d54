import { beforeAll, describe, expect, it } from "vitest";
import { SETTINGS } from "../../../functions/src/config/params";
import { needsFanOut } from "../../../functions/src/purge/rules/batches";
import {
  accountDeleteByClass,
  EMULATOR,
  MEASURED,
  NIGHT_BRAKE,
  NIGHT_WINDOW_HOURS,
  population,
  PRODUCTION,
  rpcProfile,
  simulateNight,
  type NightSettings,
} from "../../../bench/night/model";
import { defaultNightSettings } from "../../../bench/night/settings";

/**
 * The night simulation (bench/night/, `npm run bench:night`): 100,000 erasures and a 1,000,000-document tenant with
 * the product's own rules and settings and a written-down latency per operation. These checks keep the defaults
 * honest: the night fits its window, and it would not if the erasures ran one at a time.
 */
describe("a night of 100,000 erasures and a 1,000,000-document tenant (simulated, no writes)", () => {
  const accounts = population();
  let base: NightSettings;
  const sized = (): NightSettings => ({ ...base, limits: { ...base.limits, ...NIGHT_BRAKE } });

  beforeAll(async () => {
    base = await defaultNightSettings();
  }, 60_000);

  it("runs with the settings table's defaults and the queues' deployed limits", () => {
    expect(base.requestConcurrency).toBe(SETTINGS.purgeRequestConcurrency.default);
    expect(base.batchSize).toBe(SETTINGS.purgeBatchSize.default);
    expect(base.startOpsPerSecond).toBe(SETTINGS.purgeStartOpsPerSecond.default);
    expect(base.chunkConcurrency).toBe(4);
    expect(base.limits).toEqual({ brakeMaxDocuments: 100_000, brakeMaxShareOfClass: 0.5, brakeMinClassSize: 50 });
  });

  it("splits the measured operations into costs per erasure, per batch and per step that add back up", () => {
    const { perUnit, perBatch, perStep } = rpcProfile();
    for (const m of Object.values(MEASURED)) {
      for (const k of ["lookups", "queries", "commits"] as const) {
        expect(perUnit[k] + m.batches * perBatch[k] + m.steps * perStep[k]).toBeCloseTo(m.rpcs[k], 9);
        expect(Math.min(perUnit[k], perBatch[k], perStep[k])).toBeGreaterThanOrEqual(0);
      }
    }
  });

  it("erases 100,000 synthetic accounts, mostly small, ten of them over the fan-out threshold", () => {
    expect(accounts).toHaveLength(100_000);
    const sizes = accounts.map((a) => Object.values(accountDeleteByClass(a)).reduce((x, y) => x + y, 0)).sort((x, y) => x - y);
    expect(sizes[50_000]).toBeLessThan(60);
    expect(accounts.filter((a) => needsFanOut(2 + a.messages + a.activity + 2 * a.sessions + a.orders, SETTINGS.purgeFanoutThreshold.default))).toHaveLength(10);
  });

  it("finishes within the night with the defaults and a brake sized for the volume, within every per-document limit", () => {
    const r = simulateNight(accounts, sized(), PRODUCTION);
    expect(r.enqueued).toBe(100_000);
    expect(r.enqueueHours * 3600).toBeLessThan(480);
    expect([r.done, r.deferred]).toEqual([100_000, 0]);
    expect(r.nightHours).toBeLessThan(NIGHT_WINDOW_HOURS);
    expect(r.tenantHours).toBeLessThan(NIGHT_WINDOW_HOURS);
    // The tenant is planned inside one purgeRequest invocation: well inside its 480 s budget.
    expect(r.tenantPlanSeconds).toBeLessThan(480);
    // The default concurrency keeps the erasures' deletes, all tasks together, at the ramp's start rate.
    expect(r.requestDeletesPerSecond).toBeLessThanOrEqual(base.startOpsPerSecond);
    // No document is written more than about once a second: brake budget shards, evidence chain heads.
    expect(r.budgetShardWritesPerSecond).toBeLessThan(1);
    expect(r.evidenceBusiestChainPerSecond).toBeLessThan(1);
    expect(r.fannedOut).toBe(10);
    expect(r.crashed).toBeGreaterThan(0);
  }, 30_000);

  it("fits at the latency the emulator measured too", () => {
    expect(simulateNight(accounts, sized(), EMULATOR).nightHours).toBeLessThan(NIGHT_WINDOW_HOURS);
  }, 30_000);

  it("does not fit when the erasures run one at a time", () => {
    const r = simulateNight(accounts, { ...sized(), requestConcurrency: 1 }, PRODUCTION);
    expect(r.nightHours).toBeGreaterThan(NIGHT_WINDOW_HOURS);
  }, 30_000);

  it("with policy v1's brake, the run admits what the brake allows and defers the rest, never more", () => {
    const r = simulateNight(accounts, base, PRODUCTION);
    expect(r.done + r.deferred).toBe(100_000);
    expect(r.deferred).toBeGreaterThan(90_000);
    expect(r.erasureDeletes).toBeLessThanOrEqual(base.limits.brakeMaxDocuments);
    expect(r.erasureDeletes).toBeGreaterThan(0.95 * base.limits.brakeMaxDocuments);
    // At v1's limits the tenant trips the brake on its own: it waits for a retention-admin's approval.
    expect(r.tenantNeedsApproval).toBe(true);
  }, 30_000);
});
