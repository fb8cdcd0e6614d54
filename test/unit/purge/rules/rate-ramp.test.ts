import { describe, expect, it } from "vitest";
import { msUntilAllowed, RAMP_STEP_MS, rateInWindow } from "../../../../functions/src/purge/rules/rate-ramp";
import { RampLimiter } from "../../../../functions/src/purge/runner/rate-limiter";

const ramp = { startOpsPerSecond: 500, maxOpsPerSecond: 10_000 };

describe("the 500/50/5 delete ramp", () => {
  it("starts at 500/s and rises 50% every five minutes up to the ceiling", () => {
    expect(rateInWindow(ramp, 0)).toBe(500);
    expect(rateInWindow(ramp, 1)).toBe(750);
    expect(rateInWindow(ramp, 2)).toBe(1125);
    expect(rateInWindow(ramp, 20)).toBe(10_000);
  });

  it("says when a number of operations is allowed, across windows", () => {
    expect(msUntilAllowed(ramp, 0)).toBe(0);
    expect(msUntilAllowed(ramp, 500)).toBe(1000);
    // The first window allows 150,000 operations; the next 75 take a tenth of a second at 750/s.
    expect(msUntilAllowed(ramp, 150_000)).toBe(RAMP_STEP_MS);
    expect(msUntilAllowed(ramp, 150_075)).toBe(RAMP_STEP_MS + 100);
    // At the ceiling the rate stays flat.
    const flat = { startOpsPerSecond: 10_000, maxOpsPerSecond: 10_000 };
    expect(msUntilAllowed(flat, 10_000_000)).toBe(1_000_000);
  });

  it("lets the first batch go at once and spaces the next ones by the ramp", async () => {
    let now = 0;
    const slept: number[] = [];
    const limiter = new RampLimiter(ramp, () => now, (ms) => {
      slept.push(ms);
      now += ms;
      return Promise.resolve();
    });
    await limiter.acquire(450);
    expect(slept).toEqual([]);
    await limiter.acquire(450);
    expect(slept).toEqual([900]);
    now += 2_000;
    await limiter.acquire(450);
    expect(slept).toEqual([900]);
  });

  it("gives back what a batch reserved and did not issue, so the next batch waits only for what was deleted", async () => {
    let now = 0;
    const slept: number[] = [];
    const limiter = new RampLimiter(ramp, () => now, (ms) => {
      slept.push(ms);
      now += ms;
      return Promise.resolve();
    });
    // A batch reserves a full 450 before it knows its items, and deletes 50.
    await limiter.acquire(450);
    limiter.refund(400);
    await limiter.acquire(450);
    // 50 operations at 500/s: a tenth of a second, not 0.9 s.
    expect(slept).toEqual([100]);
    // A refund never takes the count below zero.
    limiter.refund(10_000);
    await limiter.acquire(1);
    expect(slept).toEqual([100]);
  });
});
