import { hashCanonical } from "../../kernel/canonical";
import type { BrakeLimits } from "./brake";

/**
 * The mass-deletion brake's run-level limits when a run's units execute as separate tasks (the scheduled
 * nightlyPurge hands each due deletion request to the purgeRequest queue). In one invocation, `admitUnits`
 * sums the units it admits; across tasks running at once there is no single sum in memory, so the run keeps
 * its **budget** in the database: the run's limits (`brakeMaxDocuments`, and the most of each class the share
 * rule lets one run delete) are split into shards, and every unit debits what it will delete from them in a
 * transaction before it starts. Shards spread the transactions of concurrent tasks over several documents
 * (one document takes about one sustained write per second); a unit debits its home shard and spills over to
 * the others only when its home shard cannot hold it.
 *
 * The guarantee is the one `admitUnits` gives: the units a run admits never trip the brake together
 * ({@link classAllowance} is `evaluateBrake`'s rule turned into a count). A unit that trips the brake on its own
 * still waits for a retention-admin (it never draws on the budget); a unit that no longer fits is deferred to
 * the next run. What is not kept is the strict order: tasks run concurrently, so a younger unit can be admitted
 * while an older one finds the budget spent; the deferred unit is enqueued first by the next run.
 */

/** The run's limits: the total, each class's allowance (null: no limit), and the allowance of a class not counted. */
export interface RunAllowance {
  total: number;
  byClass: Record<string, number | null>;
  unknownClass: number | null;
}

/** What a shard has given out so far. */
export interface ShardUse {
  total: number;
  byClass: Record<string, number>;
}

/** What one unit takes from one shard. */
export interface Debit {
  shard: number;
  total: number;
  byClass: Record<string, number>;
}

/**
 * The most documents of one class a run may delete, together, without tripping the brake's class-share rule
 * (`evaluateBrake`): a class of at least `brakeMinClassSize` documents allows its share, rounded down; a smaller
 * class is exempt while the run deletes fewer than the minimum (beyond its size the run's own count is taken as
 * the size, and that is a share of 1). null: no limit (a share of 1 or more).
 */
export function classAllowance(classSize: number, limits: BrakeLimits): number | null {
  const share = limits.brakeMaxShareOfClass;
  if (share >= 1) return null;
  if (classSize < limits.brakeMinClassSize) return limits.brakeMinClassSize - 1;
  // The same comparison evaluateBrake makes (count / size > share), so rounding cannot disagree with it.
  let n = Math.floor(share * classSize);
  while (n > 0 && n / classSize > share) n--;
  while (n + 1 <= classSize && (n + 1) / classSize <= share) n++;
  return n;
}

/** The run's allowance, from the class sizes measured when the run opened. */
export function runAllowance(classSizes: Readonly<Record<string, number>>, limits: BrakeLimits): RunAllowance {
  const byClass: Record<string, number | null> = {};
  for (const [cls, size] of Object.entries(classSizes)) byClass[cls] = classAllowance(size, limits);
  return { total: limits.brakeMaxDocuments, byClass, unknownClass: classAllowance(0, limits) };
}

/** Shard `k`'s part of an allowance split over `shards`: the parts add up to the allowance exactly. */
export function shardPart(allowance: number | null, shards: number, k: number): number | null {
  if (allowance === null) return null;
  return Math.floor(allowance / shards) + (k < allowance % shards ? 1 : 0);
}

/** How many shards a run's budget has: one per task that may run at once, up to 64. */
export function budgetShards(concurrency: number): number {
  return Math.min(64, Math.max(1, Math.floor(concurrency)));
}

/** The shard a unit debits first, by a stable hash of its key. */
export function homeShard(unitKey: string, shards: number): number {
  return Number.parseInt(hashCanonical({ unitKey }).slice(0, 8), 16) % shards;
}

const classLimit = (allowance: RunAllowance, cls: string): number | null => (cls in allowance.byClass ? allowance.byClass[cls]! : allowance.unknownClass);

/**
 * Takes `need` (documents per class) from the given shards, in the order given, without taking any shard past
 * its part of the total or of a class. Classes with the least room go first, so a tight class is not crowded
 * out of a shard by a loose one. Returns the debits, or null when the shards cannot hold all of it (then
 * nothing is taken). A split this greedy cannot find may exist; missing it defers a unit, never over-admits.
 */
export function allocate(
  need: Readonly<Record<string, number>>,
  shards: readonly { shard: number; use: ShardUse }[],
  allowance: RunAllowance,
  shardCount: number,
): Debit[] | null {
  const remaining = new Map(Object.entries(need).filter(([, n]) => n > 0));
  if (remaining.size === 0) return [];
  const room = (cls: string) => classLimit(allowance, cls) ?? Number.POSITIVE_INFINITY;
  const order = [...remaining.keys()].sort((a, b) => room(a) - room(b) || (a < b ? -1 : a > b ? 1 : 0));
  const debits: Debit[] = [];
  for (const { shard, use } of shards) {
    let totalLeft = shardPart(allowance.total, shardCount, shard)! - use.total;
    const byClass: Record<string, number> = {};
    for (const cls of order) {
      const want = remaining.get(cls) ?? 0;
      if (want === 0 || totalLeft <= 0) continue;
      const part = shardPart(classLimit(allowance, cls), shardCount, shard);
      const classLeft = part === null ? Number.POSITIVE_INFINITY : part - (use.byClass[cls] ?? 0);
      const take = Math.min(want, classLeft, totalLeft);
      if (take <= 0) continue;
      byClass[cls] = take;
      totalLeft -= take;
      remaining.set(cls, want - take);
    }
    const total = Object.values(byClass).reduce((a, b) => a + b, 0);
    if (total > 0) debits.push({ shard, total, byClass });
    if ([...remaining.values()].every((n) => n === 0)) return debits;
  }
  return null;
}

/** A shard's use after a debit. */
export function addDebit(use: ShardUse, debit: Debit): ShardUse {
  const byClass = { ...use.byClass };
  for (const [cls, n] of Object.entries(debit.byClass)) byClass[cls] = (byClass[cls] ?? 0) + n;
  return { total: use.total + debit.total, byClass };
}

/** What of `need` a unit has not been admitted for yet (a retried task re-plans; it debits only what grew). */
export function stillNeeded(need: Readonly<Record<string, number>>, admitted: Readonly<Record<string, number>>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [cls, n] of Object.entries(need)) {
    const more = n - (admitted[cls] ?? 0);
    if (more > 0) out[cls] = more;
  }
  return out;
}

/** A run's key: the same for every attempt of one scheduled run (its correlation id), so a retried schedule reuses its budget and its task ids. */
export const runKeyOf = (correlationId: string): string => hashCanonical({ purgeRun: correlationId }).slice(0, 24);
