import { msUntilAllowed, type RampSettings } from "../rules/rate-ramp";

/**
 * Spaces a run's destructive batches so that the operations issued so far stay within the ramp
 * (purge/rules/rate-ramp.ts). A batch waits until the ramp has allowed everything issued before it, then counts
 * its own operations; the first batch starts at once. One limiter per invocation, shared by every unit.
 */
export class RampLimiter {
  private issued = 0;
  private startedAt: number | null = null;

  constructor(
    private readonly ramp: RampSettings,
    private readonly clock: () => number = Date.now,
    private readonly sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
  ) {}

  async acquire(ops: number): Promise<void> {
    this.startedAt ??= this.clock();
    const wait = msUntilAllowed(this.ramp, this.issued) - (this.clock() - this.startedAt);
    if (wait > 0) await this.sleep(wait);
    this.issued += ops;
  }

  /** Gives back operations acquired but not issued (a batch reserves its full size before it knows its items). */
  refund(ops: number): void {
    this.issued = Math.max(0, this.issued - ops);
  }
}
