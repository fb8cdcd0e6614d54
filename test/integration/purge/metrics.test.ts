/**
 * The purge's metric: retention.purge_deletions per class, emitted after each record commits. It must add
 * up to what the evidence says was deleted, and a run "as of" another time (a fictional now) emits nothing.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { setMetricsTransport } from "../../../functions/src/platform/metrics";
import { policy } from "../../../functions/src/platform/registry";
import { runNightlyPurge } from "../../../functions/src/purge/job";
import { captureMetrics, point } from "../../helpers/metrics";
import { expectChainVerifies, putCustomer, requestDeletion, reset, runOptions } from "./support";

describe("purge metrics", () => {
  beforeEach(async () => {
    await reset();
  });
  afterEach(() => {
    setMetricsTransport(null);
  });

  it("retention.purge_deletions adds up, per class, to the deletions the evidence records", async () => {
    await putCustomer("u-m1", { messages: 3, activity: 2 });
    await requestDeletion("u-m1");
    const metrics = captureMetrics();
    const summary = await runNightlyPurge(runOptions({ asOfMs: null, sweep: false, batchSize: 2 }));
    expect((summary.units as { outcome: string }[]).map((u) => u.outcome)).toEqual(["DONE"]);

    const deleted = (await expectChainVerifies()).filter((e) => e.action === "PURGE_BATCH").flatMap((e) => e.paths ?? []);
    expect(deleted.length).toBeGreaterThan(4);
    const expected = new Map<string, number>();
    for (const p of deleted) {
      const cls = policy().classForPath(p)!.id;
      expected.set(cls, (expected.get(cls) ?? 0) + 1);
    }
    for (const [cls, n] of expected) {
      const points = point(metrics, "retention.purge_deletions", { class: cls }) as number[];
      expect(points.reduce((a, b) => a + b, 0), cls).toBe(n);
    }
    const all = point(metrics, "retention.purge_deletions") as number[];
    expect(all.reduce((a, b) => a + b, 0)).toBe(deleted.length);
  });

  it("a time-travelled run emits nothing", async () => {
    await putCustomer("u-m2");
    await requestDeletion("u-m2");
    const metrics = captureMetrics();
    await runNightlyPurge(runOptions({ sweep: false }));
    expect((await expectChainVerifies()).some((e) => e.action === "PURGE_BATCH")).toBe(true);
    expect(point(metrics, "retention.purge_deletions")).toEqual([]);
  });
});
