/**
 * The purge's delete-rate ramp, pure: Firestore's 500/50/5 guidance (start at 500 operations per second and
 * raise the rate by 50% every 5 minutes) as a schedule, capped at a ceiling. The infrastructure limiter asks
 * it when the next batch may start.
 */
export const RAMP_STEP_MS = 5 * 60_000;
export const RAMP_FACTOR = 1.5;

export interface RampSettings {
  startOpsPerSecond: number;
  maxOpsPerSecond: number;
}

/** The rate allowed during the k-th five-minute window of a run (k = 0 is the first). */
export function rateInWindow(ramp: RampSettings, k: number): number {
  return Math.min(ramp.maxOpsPerSecond, ramp.startOpsPerSecond * RAMP_FACTOR ** k);
}

/**
 * The earliest time (ms since the run started) by which the ramp has allowed `ops` operations in total.
 * Operations accrue at each window's rate, so after 5 minutes at 500/s, 150,000 operations are allowed.
 */
export function msUntilAllowed(ramp: RampSettings, ops: number): number {
  if (ops <= 0) return 0;
  let remaining = ops;
  for (let k = 0; ; k++) {
    const rate = rateInWindow(ramp, k);
    const perWindow = (rate * RAMP_STEP_MS) / 1000;
    // Once the ceiling is reached every later window has the same rate: finish in closed form.
    if (remaining <= perWindow || rate >= ramp.maxOpsPerSecond) return k * RAMP_STEP_MS + (remaining / rate) * 1000;
    remaining -= perWindow;
  }
}
