/**
 * A night of the purge, simulated with no writes: 100,000 synthetic account erasures and one 1,000,000-document
 * tenant closure, through the scheduled run, the purgeRequest queue, the brake's run budget, the purgeChunk chain,
 * the checkpoints and the delete-rate ramp. The rules are the product's own (the batch cutter, step planning and
 * chunks, the fan-out threshold, the brake and the run budget, the ramp), the settings are the settings table's,
 * and the queues' limits are the deployed functions'. What is modelled is only time: a written-down latency per
 * Firestore operation (`Latency`), applied to the operations one erasure was counted to issue on the emulator
 * (`MEASURED`). docs/SCALE.md, "A night of 100,000 erasures", reads the result.
 */
import { BatchCutter, allChunks, needsFanOut, stepsOf, type BatchGroup, type StageLayout } from "../../functions/src/purge/rules/batches";
import { evaluateBrake, type BrakeLimits } from "../../functions/src/purge/rules/brake";
import { msUntilAllowed, type RampSettings } from "../../functions/src/purge/rules/rate-ramp";
import { addDebit, allocate, budgetShards, homeShard, runAllowance, type ShardUse } from "../../functions/src/purge/rules/run-budget";
import { tenantDeleteByClass, tenantManifest } from "./tenant-manifest";

/** The window a night's purge must finish in: from the 02:00 schedule to the start of the working day. */
export const NIGHT_WINDOW_HOURS = 6;

/** Milliseconds per operation. */
export interface Latency {
  name: string;
  /** One batchGetDocuments round trip (a transaction's reads, a checkpoint or record read). */
  lookupMs: number;
  /** One runQuery round trip, to its first result. */
  queryMs: number;
  /** One commit round trip (a transaction's or a record's). */
  commitMs: number;
  /** Each document a query streams (discovery, the descendant probe, verification). */
  streamDocMs: number;
  /** Each write or delete inside a commit. */
  writeMs: number;
  /** Deleting the Auth account (finalize of a user's erasure): one Auth Admin API call. */
  authDeleteMs: number;
  /** Cloud Tasks dispatch and the HTTP invocation of a warm instance, per task. */
  taskOverheadMs: number;
  /** A new instance's start, once per concurrent slot. */
  coldStartMs: number;
  /** One task created by the scheduler (createTask). */
  enqueueMs: number;
}

/**
 * What this machine's Firestore emulator gave: the mean time per RPC of one erasure (`MEASURED`: 740–1,650 ms for
 * 107 RPCs over two runs, so 7–15 ms; the higher is taken), per streamed document from the raw stream (15,723
 * docs/s at 10k, docs/BENCHMARKS.md and ENVIRONMENT.md), per write from the 450-document transactions of the bench
 * profile (about 120 ms each). Auth and Cloud Tasks costs are not measured here (the emulators differ too much)
 * and are the production model's.
 */
export const EMULATOR: Latency = {
  name: "emulator (measured here)",
  lookupMs: 15,
  queryMs: 15,
  commitMs: 15,
  streamDocMs: 0.064,
  writeMs: 0.25,
  authDeleteMs: 150,
  taskOverheadMs: 150,
  coldStartMs: 5_000,
  enqueueMs: 50,
};

/**
 * Production, assumed (this machine cannot reach it): in-region round trips of 15 ms per lookup, 20 ms per query and
 * 40 ms per commit (one to three times the emulator's mean per RPC here, commits counted the slowest), 0.1 ms per
 * streamed document and 0.3 ms per write in a commit; 150 ms per Auth delete, 150 ms of Cloud Tasks dispatch and
 * invocation per task, a 5 s cold start per instance, 50 ms per createTask. Every number is on the slow side of
 * what one expects in one region, so a faster production only shortens the night.
 */
export const PRODUCTION: Latency = {
  name: "production (assumed)",
  lookupMs: 15,
  queryMs: 20,
  commitMs: 40,
  streamDocMs: 0.1,
  writeMs: 0.3,
  authDeleteMs: 150,
  taskOverheadMs: 150,
  coldStartMs: 5_000,
  enqueueMs: 50,
};

/** RPCs by kind. */
export interface Rpcs {
  lookups: number;
  queries: number;
  commits: number;
}

/**
 * What one erasure's purgeRequest task issued on the emulator, counted from the Admin SDK's RPCs
 * (`npm run bench:request-unit`, 2026-12-01; the median of 5 accounts per shape): a small account in 4 batches and
 * 5 steps; a large one cut into 23 batches; and the same in 24 steps. The differences give the cost per batch and per
 * step; the rest is the cost per erasure (lease, plan, brake, start, late sweep, verification, ledger, end state).
 */
export const MEASURED = {
  small: { batches: 4, steps: 5, rpcs: { lookups: 70, queries: 17, commits: 20 } },
  manyBatches: { batches: 23, steps: 5, rpcs: { lookups: 223, queries: 79, commits: 64 } },
  manySteps: { batches: 23, steps: 24, rpcs: { lookups: 231, queries: 79, commits: 77 } },
} as const;

const sub = (a: Rpcs, b: Rpcs, k = 1): Rpcs => ({ lookups: (a.lookups - b.lookups) / k, queries: (a.queries - b.queries) / k, commits: (a.commits - b.commits) / k });
const scale = (a: Rpcs, k: number): Rpcs => ({ lookups: a.lookups * k, queries: a.queries * k, commits: a.commits * k });

/** The measured RPCs split into a cost per erasure, per batch and per step. */
export function rpcProfile(m = MEASURED): { perUnit: Rpcs; perBatch: Rpcs; perStep: Rpcs } {
  const perBatch = sub(m.manyBatches.rpcs, m.small.rpcs, m.manyBatches.batches - m.small.batches);
  const perStep = sub(m.manySteps.rpcs, m.manyBatches.rpcs, m.manySteps.steps - m.manyBatches.steps);
  const perUnit = sub(sub(m.small.rpcs, scale(perBatch, m.small.batches)), scale(perStep, m.small.steps));
  return { perUnit, perBatch, perStep };
}

const PROFILE = rpcProfile();

const rpcMs = (r: Rpcs, l: Latency): number => r.lookups * l.lookupMs + r.queries * l.queryMs + r.commits * l.commitMs;

/** The settings a night runs with. */
export interface NightSettings {
  batchSize: number;
  stepBatches: number;
  parallelBatches: number;
  fanOutThreshold: number;
  chunkSteps: number;
  startOpsPerSecond: number;
  maxOpsPerSecond: number;
  leaseSeconds: number;
  requestConcurrency: number;
  requestDispatchesPerSecond: number;
  maxRequestTasks: number;
  chunkConcurrency: number;
  chunkDispatchesPerSecond: number;
  /** The policy's brake. */
  limits: BrakeLimits;
  /** The scheduled invocation's budget for enqueueing (then it stops; the rest wait for the next night). */
  schedulerBudgetMs: number;
  /** Tasks of one erasure that crash once (a process lost mid-unit), and wait for their lease before the retry. */
  crashRate: number;
}

/** One synthetic erasure: how many documents of each kind. */
export interface Account {
  messages: number;
  orders: number;
  activity: number;
  sessions: number;
}

/** A deterministic PRNG (mulberry32), so the population is the same on every run. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const geometric = (r: () => number, mean: number): number => Math.floor(Math.log(1 - r()) / Math.log(1 - 1 / (mean + 1)));

/**
 * 100,000 synthetic account erasures, shaped like the demo's customers (data map of policy v1): the profile, the
 * directory entry, orders (masked, kept for finance) with the user's messages on them, activity records, sessions
 * with a token each. Typical accounts have a few orders and a dozen or two activity records; 1% are heavy users
 * (20x the activity, 10x the messages); 10 are giants of 6,000–20,000 documents, over the fan-out threshold.
 */
export function population(n = 100_000, seed = 13): Account[] {
  const r = rng(seed);
  const out: Account[] = [];
  for (let i = 0; i < n; i++) {
    const heavy = r() < 0.01;
    const orders = geometric(r, 3);
    let messages = 0;
    for (let o = 0; o < orders; o++) messages += geometric(r, 3);
    const activity = Math.round(Math.exp(Math.log(12) + 0.9 * Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r())));
    out.push({ orders, messages: heavy ? messages * 10 : messages, activity: heavy ? activity * 20 : activity, sessions: geometric(r, 2) });
  }
  for (let g = 0; g < 10; g++) out[Math.floor(r() * n)] = { orders: 50, messages: 1_000 + Math.floor(r() * 4_000), activity: 5_000 + Math.floor(r() * 11_000), sessions: 20 };
  return out;
}

/** What an erasure deletes per class (policy v1's classes), for the brake. */
export const accountDeleteByClass = (a: Account): Record<string, number> => ({
  "user-delete": 1 + a.messages + 1 + a.activity,
  "session-30d": a.sessions,
  "session-child-inherit": a.sessions,
});

/** Paths of an erasure in discovery's order, fed to the real batch cutter (grouped as the plan groups them). */
function* accountItems(a: Account): Generator<[BatchGroup, string]> {
  const t = "tenants/t-1";
  yield ["own", `${t}/users/u-1`];
  for (let s = 0; s < a.sessions; s++) {
    yield ["own", `sessions/s-${s}`];
    yield ["own", `sessions/s-${s}/tokens/tk`];
  }
  for (let m = 0; m < a.messages; m++) yield ["own", `${t}/orders/o-${m % Math.max(1, a.orders)}/messages/m-${m}`];
  yield ["external", "userDirectory/u-1"];
  for (let x = 0; x < a.activity; x++) yield ["external", `activity/a-${x}`];
  for (let o = 0; o < a.orders; o++) yield ["mask", `${t}/orders/o-${o}`];
}

const shapeKey = (a: Account): string => `${a.messages}:${a.orders}:${a.activity}:${a.sessions}`;
const layoutCache = new Map<string, { layout: StageLayout[]; counts: Map<string, number> }>();

/** The stage layout the real cutter gives an erasure, and the documents of each stage (memoised per shape). */
export function accountLayout(a: Account, batchSize: number): { layout: StageLayout[]; counts: Map<string, number> } {
  const key = `${batchSize}:${shapeKey(a)}`;
  const cached = layoutCache.get(key);
  if (cached) return cached;
  const counts = new Map<string, number>();
  const cutter = new BatchCutter(batchSize, (b) => counts.set(b.stage, (counts.get(b.stage) ?? 0) + b.items.length));
  for (const [group, path] of accountItems(a)) cutter.add(group, group === "mask" ? { path, fields: ["customerName", "shippingAddress"] } : { path });
  const out = { layout: cutter.end(), counts };
  layoutCache.set(key, out);
  return out;
}

const pathsOf = (a: Account): number => 1 + 2 * a.sessions + a.messages + 1 + a.activity + a.orders;

/** The work of a unit's steps (delete and mask batches), per step, from the real step plan. */
interface StepWork {
  /** Time of the step's batch rounds (its batches, `parallelBatches` at a time) and its checkpoint. */
  ms: number;
  deletes: number;
}

function stepWork(layout: readonly StageLayout[], counts: ReadonlyMap<string, number>, s: NightSettings, l: Latency): StepWork[] {
  const { perBatch, perStep } = PROFILE;
  return stepsOf(layout, s.stepBatches).flatMap((st) => {
    if (st.kind !== "group") return [];
    // The cutter fills every batch of a stage but its last: the step's documents exactly.
    const total = counts.get(st.stage) ?? 0;
    const docs = Math.min(total, (st.first + st.count) * s.batchSize) - st.first * s.batchSize;
    // Each batch: its RPCs, the probe streaming its range and the commit writing its documents. A step's batches are
    // counted one after another, not `parallelBatches` at a time: when this was measured they all appended to the
    // unit's one evidence chain and contended on its head (23 batches: 8.5 s in 4-wide steps, 2.2 s one at a time).
    // Each batch now has a chain of its own; counting them in sequence keeps the model on the slow side.
    const batchMs = rpcMs(perBatch, l) + Math.min(docs, s.batchSize) * (l.streamDocMs + l.writeMs);
    return [{ ms: st.count * batchMs + rpcMs(perStep, l), deletes: st.batchKind === "delete" ? docs : 0 }];
  });
}

/** An invocation's steps under its own delete-rate limiter (the ramp starts again in every invocation). */
function invocationMs(steps: readonly StepWork[], ramp: RampSettings): number {
  let work = 0;
  let issued = 0;
  let at = 0;
  for (const st of steps) {
    // A step starts once the ramp has allowed what was issued before (purge/runner/rate-limiter.ts).
    at = Math.max(at + st.ms, msUntilAllowed(ramp, issued) + st.ms);
    issued += st.deletes;
    work += st.ms;
  }
  return Math.max(work, at);
}

export interface UnitTime {
  /** Lease, plan, brake and start: before the first delete. */
  planMs: number;
  /** Everything in the request's own task (for a fanned-out unit: up to the hand-over). */
  taskMs: number;
  /** A fanned-out unit's chunks, each its own purgeChunk invocation. */
  chunksMs: number[];
  deletes: number;
  batches: number;
  evidenceAppends: number;
}

/** How long one erasure takes, as the engine would run it. */
export function accountTime(a: Account, s: NightSettings, l: Latency): UnitTime {
  const { layout, counts } = accountLayout(a, s.batchSize);
  return unitTime(pathsOf(a), layout, counts, s, l, l.authDeleteMs);
}

function unitTime(paths: number, layout: readonly StageLayout[], counts: ReadonlyMap<string, number>, s: NightSettings, l: Latency, finalizeExtraMs: number): UnitTime {
  const { perUnit } = PROFILE;
  const ramp = { startOpsPerSecond: Math.min(s.startOpsPerSecond, s.maxOpsPerSecond), maxOpsPerSecond: s.maxOpsPerSecond };
  const batches = layout.reduce((n, x) => n + x.batches, 0);
  // Planning: discovery streams every path once; the records are written 16 at a time while it streams.
  const planMs = rpcMs(perUnit, l) + paths * l.streamDocMs + Math.ceil(batches / 16) * l.commitMs;
  const steps = stepWork(layout, counts, s, l);
  const deletes = steps.reduce((n, x) => n + x.deletes, 0);
  const evidenceAppends = 5 + batches;
  if (!needsFanOut(paths, s.fanOutThreshold)) {
    return { planMs, taskMs: l.taskOverheadMs + planMs + invocationMs(steps, ramp) + finalizeExtraMs, chunksMs: [], deletes, batches, evidenceAppends };
  }
  // Over the threshold: the task hands the round to the purgeChunk chain, chunkSteps steps per task.
  const total = steps.length + 1;
  const chunksMs = allChunks(total, s.chunkSteps).map((c, i, all) => {
    const own = steps.slice(c.start, Math.min(c.end, steps.length));
    return l.taskOverheadMs + invocationMs(own, ramp) + (i === all.length - 1 ? finalizeExtraMs : 0);
  });
  return { planMs, taskMs: l.taskOverheadMs + planMs + 2 * l.commitMs + l.enqueueMs, chunksMs, deletes, batches, evidenceAppends };
}

let tenantCache: { layout: StageLayout[]; counts: Map<string, number>; paths: number; batchSize: number } | null = null;

/** The 1,000,000-document tenant's closure (bench/night/tenant-manifest.ts), cut by the real cutter. */
export function tenantTime(s: NightSettings, l: Latency): UnitTime {
  if (!tenantCache || tenantCache.batchSize !== s.batchSize) {
    const m = tenantManifest();
    const external = new Set(m.external);
    const counts = new Map<string, number>();
    const cutter = new BatchCutter(s.batchSize, (b) => counts.set(b.stage, (counts.get(b.stage) ?? 0) + b.items.length));
    for (const p of m.delete) cutter.add(external.has(p) ? "external" : "own", { path: p });
    for (const x of m.mask) cutter.add("mask", { path: x.path, fields: x.fields });
    tenantCache = { layout: cutter.end(), counts, paths: m.delete.length + m.mask.length, batchSize: s.batchSize };
  }
  return unitTime(tenantCache.paths, tenantCache.layout, tenantCache.counts, s, l, 0);
}

/**
 * A policy version published for this volume: the brake lets one run delete what 100,000 erasures hold (about 4.9
 * million documents), instead of policy v1's 100,000. Class shares stay at v1's 50%.
 */
export const NIGHT_BRAKE = { brakeMaxDocuments: 10_000_000 };

/** A database the size these erasures come from: class sizes for the brake's share rule. */
export const CLASS_SIZES: Record<string, number> = {
  "user-delete": 800_000_000,
  "session-30d": 40_000_000,
  "session-child-inherit": 40_000_000,
  "finance-7y": 80_000_000,
  "tenant-account": 50_000,
  orders: 10_000_000,
  messages: 90_000_000,
  users: 5_000_000,
  tenants: 20_000,
  directory: 3_000_000,
  feeds: 2_000_000,
};

export interface NightResult {
  latency: string;
  settings: NightSettings;
  requests: number;
  enqueued: number;
  enqueueHours: number;
  /** Erasures the brake admitted and completed, and those it deferred to the next night. */
  done: number;
  deferred: number;
  /** The last erasure's end (the queue drained). */
  requestsHours: number;
  tenantHours: number;
  /** The tenant's planning, inside one purgeRequest invocation (540 s timeout, 480 s budget). */
  tenantPlanSeconds: number;
  nightHours: number;
  /** The tenant trips the brake on its own (it runs here as if a retention-admin had approved its deletion set). */
  tenantNeedsApproval: boolean;
  /** Erasures over the fan-out threshold, which went on to the purgeChunk chain. */
  fannedOut: number;
  /** Documents the night deleted, and those of them the erasures deleted. */
  deletes: number;
  erasureDeletes: number;
  crashed: number;
  /** Documents the erasures deleted per second on average, all tasks together. */
  requestDeletesPerSecond: number;
  /** Evidence appends per second over the night, and on the busiest chain (hashing gives a chain up to 2.2x its share). */
  evidenceAppendsPerSecond: number;
  evidenceBusiestChainPerSecond: number;
  /** Transactions per second on one brake-budget shard (guidance: about 1 write a second per document). */
  budgetShardWritesPerSecond: number;
  /** What bounds the night first. */
  bottleneck: string;
}

/** Time-ordered slots of a task queue: `concurrency` at a time, at most `perSecond` dispatches a second. */
class Queue {
  private readonly free: number[];
  private lastDispatch = Number.NEGATIVE_INFINITY;
  busyMs = 0;
  constructor(
    concurrency: number,
    private readonly perSecond: number,
    private readonly coldStartMs: number,
  ) {
    // Each slot's instance starts cold once.
    this.free = Array.from({ length: concurrency }, () => -coldStartMs);
  }

  /** Runs a task that is ready at `readyMs` and lasts `ms`: when it starts and ends. */
  run(readyMs: number, ms: number): { start: number; end: number } {
    let k = 0;
    for (let i = 1; i < this.free.length; i++) if (this.free[i]! < this.free[k]!) k = i;
    const cold = this.free[k]! < 0 ? this.coldStartMs : 0;
    const start = Math.max(readyMs, Math.max(this.free[k]!, 0), this.lastDispatch + 1000 / this.perSecond);
    this.lastDispatch = start;
    const end = start + cold + ms;
    this.free[k] = end;
    this.busyMs += end - start;
    return { start, end };
  }
}

/**
 * The night. The scheduler opens the run's budget and enqueues the due requests, ENQUEUE_IN_FLIGHT at a time; the
 * purgeRequest queue dispatches them in order as slots free; each task plans, goes through the brake (alone, then
 * the run's budget, with the real shards and allocation), and runs or hands over to the purgeChunk chain, whose
 * chunks queue behind each other on their own queue. A crashed task's retry waits for its lease to expire and then
 * resumes from its checkpoint (it redoes at most the step that was in flight).
 */
export function simulateNight(accounts: readonly Account[], s: NightSettings, l: Latency, evidenceShards = 512): NightResult {
  const ENQUEUE_IN_FLIGHT = 16;
  const PAGE = 500;
  const enqueueAt = (i: number) => Math.floor(i / PAGE + 1) * l.queryMs + ((i + 1) * l.enqueueMs) / ENQUEUE_IN_FLIGHT;
  const cap = Math.min(accounts.length, s.maxRequestTasks);
  let enqueued = 0;
  while (enqueued < cap && enqueueAt(enqueued) <= s.schedulerBudgetMs) enqueued++;

  const shards = budgetShards(s.requestConcurrency);
  const allowance = runAllowance(CLASS_SIZES, s.limits);
  const uses: ShardUse[] = Array.from({ length: shards }, () => ({ total: 0, byClass: {} }));
  const requests = new Queue(s.requestConcurrency, s.requestDispatchesPerSecond, l.coldStartMs);
  const chains: number[][] = [];
  const chainReady: number[] = [];
  const r = rng(7);
  let done = 0;
  let deferred = 0;
  let fannedOut = 0;
  let crashed = 0;
  let deletes = 0;
  let appends = 0;
  let budgetWrites = 0;
  let requestsEnd = 0;
  const retries: { ready: number; ms: number }[] = [];
  const brake = (unitKey: string, need: Record<string, number>): boolean => {
    if (evaluateBrake(need, CLASS_SIZES, s.limits).tripped) return false;
    const home = homeShard(unitKey, shards);
    const order = [home, ...uses.map((_, k) => k).filter((k) => k !== home)];
    const fits = allocate(need, [{ shard: home, use: uses[home]! }], allowance, shards) ?? allocate(need, order.map((k) => ({ shard: k, use: uses[k]! })), allowance, shards);
    if (!fits) return false;
    for (const d of fits) uses[d.shard] = addDebit(uses[d.shard]!, d);
    budgetWrites += fits.length;
    return true;
  };
  const times = new Map<string, UnitTime>();
  const timeOf = (a: Account): UnitTime => {
    const key = shapeKey(a);
    const t = times.get(key) ?? accountTime(a, s, l);
    times.set(key, t);
    return t;
  };
  // The tenant's request: enqueued first (its grace ended first). It trips the brake on its own when the policy's
  // limits are below its size (then it runs here as approved, outside the budget), else it debits the budget.
  const tenant = tenantTime(s, l);
  const tenantTripsAlone = evaluateBrake(tenantDeleteByClass(), CLASS_SIZES, s.limits).tripped;
  if (!tenantTripsAlone && !brake("tenant", tenantDeleteByClass())) throw new Error("the run's budget cannot hold the tenant it admits alone");
  const tenantTask = requests.run(enqueueAt(0), tenant.taskMs);
  chains.push(tenant.chunksMs);
  chainReady.push(tenantTask.end);
  deletes += tenant.deletes;
  appends += tenant.evidenceAppends;
  for (let i = 0; i < enqueued; i++) {
    // Retries whose lease has expired go before the next fresh task once they are due.
    while (retries.length > 0 && retries[0]!.ready <= enqueueAt(i)) {
      const x = retries.shift()!;
      requestsEnd = Math.max(requestsEnd, requests.run(x.ready, x.ms).end);
    }
    const a = accounts[i]!;
    const t = timeOf(a);
    if (!brake(`request-${i}`, accountDeleteByClass(a))) {
      deferred++;
      requestsEnd = Math.max(requestsEnd, requests.run(enqueueAt(i), l.taskOverheadMs + t.planMs).end);
      continue;
    }
    done++;
    deletes += t.deletes;
    appends += t.evidenceAppends;
    let { end } = requests.run(enqueueAt(i), t.taskMs);
    if (r() < s.crashRate) {
      // Lost at a random point: the slot is free again then; the retry comes once the lease expires (Cloud Tasks'
      // backoff reaches past it), and does the rest plus the step that was in flight.
      crashed++;
      const at = r();
      end -= (1 - at) * t.taskMs;
      retries.push({ ready: end + s.leaseSeconds * 1000 + 10_000, ms: l.taskOverheadMs + (1 - at) * t.taskMs + t.taskMs / Math.max(1, t.batches) });
      retries.sort((x, y) => x.ready - y.ready);
    }
    requestsEnd = Math.max(requestsEnd, end);
    if (t.chunksMs.length > 0) {
      fannedOut++;
      chains.push(t.chunksMs);
      chainReady.push(end);
    }
  }
  for (const x of retries) requestsEnd = Math.max(requestsEnd, requests.run(x.ready, x.ms).end);

  // The purgeChunk queue: each chain's next chunk is enqueued when the one before it ends.
  const chunkQueue = new Queue(s.chunkConcurrency, s.chunkDispatchesPerSecond, l.coldStartMs);
  const next = chains.map(() => 0);
  const ends = chains.map(() => 0);
  const pending = chains.map((_, c) => ({ c, ready: chainReady[c]! }));
  while (pending.length > 0) {
    pending.sort((x, y) => x.ready - y.ready);
    const { c, ready } = pending.shift()!;
    const { end } = chunkQueue.run(ready, chains[c]![next[c]!]!);
    next[c]!++;
    ends[c] = end;
    if (next[c]! < chains[c]!.length) pending.push({ c, ready: end });
  }
  const tenantEnd = ends[0]!;
  const nightEnd = Math.max(requestsEnd, ...ends);
  const hours = (ms: number) => ms / 3_600_000;
  const requestDeletesPerSecond = (deletes - tenant.deletes) / (requestsEnd / 1000);
  // What bounds the night first: the largest of what each resource alone would take.
  const bounds: [number, string][] = [
    [requests.busyMs / s.requestConcurrency, `purgeRequest concurrency: ${s.requestConcurrency} erasures at once, each a chain of round trips`],
    [enqueueAt(enqueued - 1), "the scheduler's enqueueing"],
    [tenantEnd, `the tenant's chain: one chunk after another, each a new invocation whose delete ramp starts again at ${s.startOpsPerSecond} ops/s`],
  ];
  bounds.sort((x, y) => y[0] - x[0]);
  const bottleneck =
    nightEnd > 1.1 * bounds[0]![0] ? `the tail: a crashed task's retry waits out its lease (${s.leaseSeconds} s) before it resumes` : bounds[0]![1];
  return {
    latency: l.name,
    settings: s,
    requests: accounts.length,
    enqueued,
    enqueueHours: hours(enqueueAt(enqueued - 1)),
    done,
    deferred,
    requestsHours: hours(requestsEnd),
    tenantHours: hours(tenantEnd),
    tenantPlanSeconds: tenant.planMs / 1000,
    nightHours: hours(nightEnd),
    tenantNeedsApproval: tenantTripsAlone,
    fannedOut,
    deletes,
    erasureDeletes: deletes - tenant.deletes,
    crashed,
    requestDeletesPerSecond,
    evidenceAppendsPerSecond: appends / (nightEnd / 1000),
    evidenceBusiestChainPerSecond: (2.2 * appends) / evidenceShards / (nightEnd / 1000),
    budgetShardWritesPerSecond: budgetWrites / shards / (requestsEnd / 1000),
    bottleneck,
  };
}
