import type { DocumentData, DocumentReference, DocumentSnapshot, Transaction } from "firebase-admin/firestore";
import { segments } from "../../kernel/paths";
import { COLLECTIONS, db } from "../../platform/firestore";
import { toTimestamp } from "../../platform/governed-doc";
import { log } from "../../platform/logs";
import { policy } from "../../platform/registry";
import type { BrakeLimits } from "../rules/brake";
import { addDebit, allocate, homeShard, runAllowance, stillNeeded, type Debit, type RunAllowance, type ShardUse } from "../rules/run-budget";

/**
 * A fanned-out run's brake budget (purge/rules/run-budget.ts), in the database, where every task of the run sees it:
 *   retentionJobs/purgerun-{runKey}                   the run: its class sizes, limits and shard count, fixed when it opens
 *   retentionJobs/purgerun-{runKey}/budget/s{k}       a shard: what it has given out, in total and per class
 *   retentionJobs/purgerun-{runKey}/admitted/{unit}   what one unit was admitted for, and from which shards
 * The admission record makes a debit idempotent: a task that runs again (a retry, a duplicate delivery that got
 * the lease after the first one crashed) debits only what its new plan adds.
 */
export interface RunBudget {
  runKey: string;
  shards: number;
  classSizes: Record<string, number>;
  limits: BrakeLimits;
  policyVersion: string;
  allowance: RunAllowance;
}

export const runRef = (runKey: string): DocumentReference => db().collection(COLLECTIONS.retentionJobs).doc(`purgerun-${runKey}`);
const shardRef = (runKey: string, k: number): DocumentReference => runRef(runKey).collection("budget").doc(`s${String(k).padStart(3, "0")}`);
const admissionRef = (runKey: string, unitKey: string): DocumentReference => runRef(runKey).collection("admitted").doc(unitKey);

/**
 * The size of each class: Firestore count() aggregations over the collections the registry assigns to
 * it (a top-level collection directly, a nested one as a collection group).
 */
export async function classSizes(classes: readonly string[]): Promise<Record<string, number>> {
  const pol = policy();
  // Every count at once: each is one aggregation round trip, independent of the others.
  const sizes = await Promise.all(
    classes.map(async (cls) => {
      const counts = await Promise.all(
        pol.registry.collections
          .filter((r) => r.retentionClass === cls)
          .map(async (rule) => {
            const s = segments(rule.pattern);
            const query = s.length === 2 ? db().collection(s[0]!) : db().collectionGroup(s[s.length - 2]!);
            return (await query.count().get()).data().count;
          }),
      );
      return [cls, counts.reduce((a, b) => a + b, 0)] as const;
    }),
  );
  return Object.fromEntries(sizes);
}

function budgetFrom(runKey: string, d: DocumentData): RunBudget {
  const classSizes = (d.classSizes as Record<string, number> | undefined) ?? {};
  const limits = d.limits as BrakeLimits;
  return { runKey, shards: Number(d.shards), classSizes, limits, policyVersion: String(d.policyVersion), allowance: runAllowance(classSizes, limits) };
}

/**
 * Opens a run's budget, or reads it when the run is open already (a retried schedule, or a task that got there
 * first): the class sizes are counted once per run, before its first unit, as the in-process brake measures
 * them before a run. The limits are the policy's at that moment.
 */
export async function openRunBudget(input: { runKey: string; shards: number; nowMs: number; correlationId: string | null }): Promise<RunBudget> {
  const ref = runRef(input.runKey);
  const existing = await ref.get();
  if (existing.exists) return budgetFrom(input.runKey, existing.data()!);
  const pol = policy();
  const classes = [...new Set(pol.registry.collections.map((r) => r.retentionClass))].sort();
  const sizes = await classSizes(classes);
  const data = {
    runKey: input.runKey,
    correlationId: input.correlationId,
    shards: input.shards,
    classSizes: sizes,
    limits: { ...pol.registry.purge },
    policyVersion: pol.version,
    openedAt: toTimestamp(input.nowMs),
  };
  return db().runTransaction(async (tx) => {
    const snap = await tx.get(ref);
    if (snap.exists) return budgetFrom(input.runKey, snap.data()!);
    tx.create(ref, data);
    return budgetFrom(input.runKey, data);
  });
}

const useFrom = (snap: DocumentSnapshot | undefined): ShardUse => ({
  total: Number(snap?.get("total") ?? 0),
  byClass: (snap?.get("byClass") as Record<string, number> | undefined) ?? {},
});

interface Admission {
  byClass: Record<string, number>;
  debits: Debit[];
}

const admissionFrom = (snap: DocumentSnapshot): Admission => ({
  byClass: (snap.get("byClass") as Record<string, number> | undefined) ?? {},
  debits: (snap.get("debits") as Debit[] | undefined) ?? [],
});

/** Writes the debits onto their shards and adds them to the unit's admission record, in the caller's transaction. */
function writeDebits(tx: Transaction, budget: RunBudget, unitKey: string, uses: ReadonlyMap<number, ShardUse>, admitted: Admission, debits: readonly Debit[], nowMs: number): void {
  const byClass = { ...admitted.byClass };
  for (const d of debits) {
    tx.set(shardRef(budget.runKey, d.shard), addDebit(uses.get(d.shard)!, d));
    for (const [cls, n] of Object.entries(d.byClass)) byClass[cls] = (byClass[cls] ?? 0) + n;
  }
  tx.set(admissionRef(budget.runKey, unitKey), {
    unitKey,
    byClass,
    total: Object.values(byClass).reduce((a, b) => a + b, 0),
    debits: [...admitted.debits, ...debits],
    at: toTimestamp(nowMs),
  });
}

/**
 * Debits what a unit will delete (per class) from its run's budget: from its home shard when that shard can hold
 * it (the common case: one small transaction on one of `shards` documents), otherwise from every shard in one
 * transaction (home first, then the shards with the most room). True when the unit is admitted (now or by an
 * earlier attempt); false when the run's budget cannot hold it, and then nothing is debited.
 */
export async function reserveInRun(budget: RunBudget, unitKey: string, need: Readonly<Record<string, number>>, nowMs: number): Promise<boolean> {
  const home = homeShard(unitKey, budget.shards);
  const admRef = admissionRef(budget.runKey, unitKey);
  const atHome = await db().runTransaction(async (tx) => {
    const [adm, shard] = await tx.getAll(admRef, shardRef(budget.runKey, home));
    const admitted = admissionFrom(adm!);
    const more = stillNeeded(need, admitted.byClass);
    if (Object.keys(more).length === 0) return true;
    const use = useFrom(shard);
    const debits = allocate(more, [{ shard: home, use }], budget.allowance, budget.shards);
    if (!debits) return false;
    writeDebits(tx, budget, unitKey, new Map([[home, use]]), admitted, debits, nowMs);
    return true;
  });
  if (atHome) return true;

  const refs = Array.from({ length: budget.shards }, (_, k) => shardRef(budget.runKey, k));
  const plan = (adm: DocumentSnapshot, snaps: readonly DocumentSnapshot[]) => {
    const admitted = admissionFrom(adm);
    const uses = new Map(snaps.map((s, k) => [k, useFrom(s)]));
    const used = (k: number) => uses.get(k)!.total;
    const order = [home, ...[...uses.keys()].filter((k) => k !== home).sort((a, b) => used(a) - used(b) || a - b)];
    const debits = allocate(stillNeeded(need, admitted.byClass), order.map((k) => ({ shard: k, use: uses.get(k)! })), budget.allowance, budget.shards);
    return { admitted, uses, debits };
  };
  // A read outside any transaction first: when the whole budget cannot hold the unit (a run whose budget is
  // spent defers every unit after), it is deferred without contending with the tasks that still debit.
  const [adm0, ...snaps0] = await db().getAll(admRef, ...refs);
  if (!plan(adm0!, snaps0).debits) {
    log.info("purge.budget.spent", { runKey: budget.runKey, unitKey });
    return false;
  }
  return db().runTransaction(async (tx) => {
    const [adm, ...snaps] = await tx.getAll(admRef, ...refs);
    const p = plan(adm!, snaps);
    if (!p.debits) return false;
    writeDebits(tx, budget, unitKey, p.uses, p.admitted, p.debits, nowMs);
    return true;
  });
}
