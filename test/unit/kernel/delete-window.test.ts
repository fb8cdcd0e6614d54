/**
 * The delete window's pure rules (kernel/delete-window.ts, docs/HOLD-FENCE.md "Cloud Storage objects"): the
 * decision about each object, the window a decision opens, when a delete may start, and what a hold placement waits
 * for. The integration suite (test/integration/purge/storage-objects.test.ts) runs the races for real.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { decideObject, mayStartDelete, openWindow, placementWaits, windowStillOpen } from "../../../functions/src/kernel/delete-window";

const item = (name: string, heldWith: string) => ({ path: `gs://b/${name}`, generation: "1", heldWith });
const hold = (holdId: string, targetPath: string) => ({ holdId, targetPath, reasonCode: "LITIGATION" });

describe("the decision a window's transaction makes", () => {
  it("holds an object whose heldWith document an active hold covers (on it or an ancestor), deletes the rest", () => {
    const a = item("t/u-1/a", "tenants/t-1/users/u-1");
    expect(decideObject(a, [])).toEqual({ path: a.path, verdict: "delete" });
    expect(decideObject(a, [hold("h1", "tenants/t-1/users/u-1")])).toEqual({ path: a.path, verdict: "held", holdId: "h1", reasonCode: "LITIGATION" });
    expect(decideObject(a, [hold("h2", "tenants/t-1")])).toMatchObject({ verdict: "held", holdId: "h2" });
    // A hold on another user, on a document under the heldWith document, or on a sibling whose id extends it: not covered.
    expect(decideObject(a, [hold("h3", "tenants/t-1/users/u-10"), hold("h4", "tenants/t-1/users/u-1/sessions/s"), hold("h5", "tenants/t-10")])).toEqual({ path: a.path, verdict: "delete" });
  });
});

describe("the window", () => {
  it("names the targets that cover it and its end", () => {
    const w = openWindow({ token: "k", unitKey: "r-1", batch: "p1-objects-000000", decidedGeneration: 4, nowMs: 1000, windowMs: 30_000, toDelete: [item("a", "users/u-1"), item("b", "users/u-1")] });
    expect(w).toEqual({ token: "k", unitKey: "r-1", batch: "p1-objects-000000", covers: ["users/u-1"], decidedGeneration: 4, openedAtMs: 1000, deleteByMs: 31_000, objects: 2 });
    expect(() => openWindow({ token: "k", unitKey: "r", batch: "b", decidedGeneration: 0, nowMs: 0, windowMs: 0, toDelete: [] })).toThrow(/positive length/);
  });

  it("a delete starts only while more than the margin is left", () => {
    expect(mayStartDelete(1000, 31_000, 6000)).toBe(true);
    expect(mayStartDelete(24_999, 31_000, 6000)).toBe(true);
    expect(mayStartDelete(25_000, 31_000, 6000)).toBe(false);
    expect(mayStartDelete(40_000, 31_000, 6000)).toBe(false);
  });

  it("a delete that starts finishes (by its timeout) before the window's end, whatever the clock", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1e9 }), fc.integer({ min: 5000, max: 600_000 }), fc.integer({ min: 1000, max: 60_000 }), fc.integer({ min: 0, max: 1e9 }), (openedAt, windowMs, timeoutMs, now) => {
        const margin = timeoutMs + 1000;
        if (margin * 2 > windowMs) return;
        const deleteByMs = openedAt + windowMs;
        if (mayStartDelete(now, deleteByMs, margin)) expect(now + timeoutMs).toBeLessThan(deleteByMs);
      }),
    );
  });

  it("a placement waits for the covering windows whose end is ahead, names every covering window it saw, and ignores the others", () => {
    const windows = [
      { id: "w-open", token: "a", covers: ["tenants/t-1", "tenants/t-1/users/u-1"], deleteByMs: 2000 },
      { id: "w-expired", token: "b", covers: ["tenants/t-1", "tenants/t-1/users/u-2"], deleteByMs: 500 },
      { id: "w-other", token: "c", covers: ["tenants/t-2", "tenants/t-2/users/u-9"], deleteByMs: 9000 },
    ];
    expect(placementWaits("tenants/t-1", windows, 1000)).toEqual({ seen: ["w-expired", "w-open"], waitFor: [{ id: "w-open", token: "a", deleteByMs: 2000 }] });
    expect(placementWaits("tenants/t-1/users/u-1", windows, 1000)).toEqual({ seen: ["w-open"], waitFor: [{ id: "w-open", token: "a", deleteByMs: 2000 }] });
    expect(placementWaits("tenants/t-3", windows, 1000)).toEqual({ seen: [], waitFor: [] });
  });

  it("a waited-for window stops holding the placement when it closes, is opened again (another token), or ends", () => {
    expect(windowStillOpen({ token: "a", deleteByMs: 2000 }, "a", 1000)).toBe(true);
    expect(windowStillOpen(null, "a", 1000)).toBe(false);
    expect(windowStillOpen({ token: "b", deleteByMs: 2000 }, "a", 1000)).toBe(false);
    expect(windowStillOpen({ token: "a", deleteByMs: 2000 }, "a", 2000)).toBe(false);
  });
});
