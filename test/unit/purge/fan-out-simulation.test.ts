import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { allChunks, chunkAt, needsFanOut, stepsOf, type PurgeBatch, type PurgeStep, type StageLayout } from "../../../functions/src/purge/rules/batches";
import { evaluateBrake, type BrakeLimits } from "../../../functions/src/purge/rules/brake";
import { documentDepth, parentDocumentPath } from "../../../functions/src/kernel/paths";
import { cutInOrder } from "../../helpers/batches";

/**
 * The fan-out logic at internet scale, with no writes: a tenant purge whose manifest holds 1,000,000 paths
 * (orders with messages, users, external copies, masked records) streams through the batch cutter into
 * batches, stages, steps (groups of batches) and task chunks, and a chain of tasks that crashes at
 * arbitrary points is replayed from its checkpoints. The brake is evaluated at the registry's configured
 * thresholds at that size.
 */

const ORDERS = 96_000;
const MESSAGES_PER_ORDER = 9;
const USERS = 999;
const DIRECTORY = 15_000;
const FEED_ITEMS = 14_000;
const MASKS = 10_000;
const BATCH_SIZE = 450; // RETENTION_PURGE_BATCH_SIZE default
const STEP_BATCHES = 16; // RETENTION_PURGE_STEP_BATCHES default
const CHUNK_STEPS = 8; // RETENTION_PURGE_CHUNK_STEPS default
const FANOUT_THRESHOLD = 5000; // RETENTION_PURGE_FANOUT_THRESHOLD default

/** Path depth by counting separators (documentDepth splits; a million splits per check is too slow). */
function slashes(path: string): number {
  let n = 0;
  for (let i = 0; i < path.length; i++) if (path.charCodeAt(i) === 47) n++;
  return n;
}

const pad = (n: number) => String(n).padStart(6, "0");

function manifest() {
  const own: string[] = ["tenants/t-big"];
  for (let u = 0; u < USERS; u++) own.push(`tenants/t-big/users/u-${pad(u)}`);
  for (let o = 0; o < ORDERS; o++) {
    const order = `tenants/t-big/orders/o-${pad(o)}`;
    own.push(order);
    for (let m = 0; m < MESSAGES_PER_ORDER; m++) own.push(`${order}/messages/m-${m}`);
  }
  const external: string[] = [];
  for (let d = 0; d < DIRECTORY; d++) external.push(`directoryListings/t-big-${pad(d)}`);
  for (let f = 0; f < FEED_ITEMS; f++) external.push(`feeds/f-${pad(f % 50)}/items/t-big-${pad(f)}`);
  const mask = Array.from({ length: MASKS }, (_, i) => ({ path: `invoices/t-big-${pad(i)}`, fields: ["email", "customerName"] }));
  // Discovery's order (depth first: a document, then everything under it), the shape the planner really gets;
  // arbitrary orders are covered by the property tests in purge-batches.test.ts at smaller sizes.
  const del = [...own, ...external];
  return { delete: del, external, mask };
}

const input = manifest();
const TOTAL_PATHS = input.delete.length + input.mask.length;
let batches: PurgeBatch[] = [];
let layout: StageLayout[] = [];
let steps: PurgeStep[] = [];

beforeAll(() => {
  ({ batches, layout } = cutInOrder(input, BATCH_SIZE));
  steps = stepsOf(layout, STEP_BATCHES);
}, 60_000);

describe("fan-out simulation over a 1,000,000-path manifest (no writes)", () => {
  it("the manifest is the size the scale plan talks about, and it fans out", () => {
    expect(TOTAL_PATHS).toBe(1_000_000);
    expect(needsFanOut(TOTAL_PATHS, FANOUT_THRESHOLD)).toBe(true);
    expect(needsFanOut(FANOUT_THRESHOLD, FANOUT_THRESHOLD)).toBe(false);
  });

  it("every path lands in exactly one batch, batches are bounded and never mix depth, kind or stage", { timeout: 30_000 }, () => {
    const seen = new Map<string, number>();
    let bounded = true;
    let mixed = 0;
    batches.forEach((b, index) => {
      if (b.items.length < 1 || b.items.length > BATCH_SIZE) bounded = false;
      const depth = slashes(b.items[0]!.path);
      for (const item of b.items) {
        if (seen.has(item.path)) throw new Error(`${item.path} is in batches ${seen.get(item.path)} and ${index}`);
        seen.set(item.path, index);
        if (b.kind === "delete" && slashes(item.path) !== depth) mixed++;
      }
    });
    expect(bounded).toBe(true);
    expect(mixed).toBe(0);
    expect(seen.size).toBe(TOTAL_PATHS);
    expect(input.delete.filter((p) => !seen.has(p))).toEqual([]);
    expect(input.mask.filter((m) => batches[seen.get(m.path)!]!.kind !== "mask")).toEqual([]);
    // Only the last batch of a stage may be short: the count is the sum of ceil(level / batch size).
    const perStage = new Map<string, number>();
    for (const b of batches) perStage.set(b.stage, (perStage.get(b.stage) ?? 0) + b.items.length);
    const expected = [...perStage.values()].reduce((n, size) => n + Math.ceil(size / BATCH_SIZE), 0);
    expect(batches.length).toBe(expected);
    // The layout the cutter reports agrees with the batches it handed out: each stage numbered 0..n-1.
    expect(layout.reduce((n, s) => n + s.batches, 0)).toBe(batches.length);
    for (const s of layout) {
      expect(batches.filter((b) => b.stage === s.key).map((b) => b.seq)).toEqual(Array.from({ length: s.batches }, (_, i) => i));
    }
  });

  it("children are deleted before their parents, the own tree before external copies, masks last", { timeout: 30_000 }, () => {
    const position = new Map(layout.map((s, i) => [s.key, i]));
    const rank = (b: PurgeBatch) => position.get(b.stage)!;
    const stageOf = new Map<string, number>();
    for (const b of batches) for (const i of b.items) stageOf.set(i.path, rank(b));
    let stageDown = 0;
    for (let i = 1; i < batches.length; i++) if (rank(batches[i]!) < rank(batches[i - 1]!)) stageDown++;
    expect(stageDown).toBe(0);
    let violations = 0;
    let checked = 0;
    for (const p of input.delete) {
      const cut = p.lastIndexOf("/", p.lastIndexOf("/") - 1);
      const parent = cut > 0 ? p.slice(0, cut) : null;
      if (parent === null || !stageOf.has(parent)) continue;
      checked++;
      if (!(stageOf.get(parent)! > stageOf.get(p)!)) violations++;
    }
    expect(checked).toBe(ORDERS * (MESSAGES_PER_ORDER + 1) + USERS);
    // The cheap parent lookup above agrees with the domain's on every shape in the manifest.
    for (const p of ["tenants/t-big/orders/o-000001/messages/m-1", "tenants/t-big/users/u-000001", "feeds/f-000001/items/t-big-000001", "directoryListings/t-big-000001"]) {
      const cut = p.lastIndexOf("/", p.lastIndexOf("/") - 1);
      expect(cut > 0 ? p.slice(0, cut) : null).toBe(parentDocumentPath(p));
      expect(slashes(p)).toBe(2 * documentDepth(p) - 1);
    }
    expect(violations).toBe(0);
    const external = new Set(input.external);
    const ownStages = batches.filter((b) => b.kind === "delete" && !external.has(b.items[0]!.path)).map(rank);
    const extStages = batches.filter((b) => b.kind === "delete" && external.has(b.items[0]!.path)).map(rank);
    const maskStages = batches.filter((b) => b.kind === "mask").map(rank);
    expect(Math.max(...ownStages)).toBeLessThan(Math.min(...extStages));
    expect(Math.max(...extStages)).toBeLessThan(Math.min(...maskStages));
    // A batch is wholly external or wholly own tree.
    const split = batches.filter((b) => b.kind === "delete" && new Set(b.items.map((i) => external.has(i.path))).size > 1);
    expect(split).toHaveLength(0);
  });

  it("steps cover every batch exactly once in stage order, chunks cover every step once, and finalize comes last", () => {
    const total = steps.length;
    const covered: string[] = [];
    for (const step of steps.slice(0, -1)) {
      if (step.kind !== "group") throw new Error("finalize before the last step");
      expect(step.count).toBeGreaterThanOrEqual(1);
      expect(step.count).toBeLessThanOrEqual(STEP_BATCHES);
      for (let seq = step.first; seq < step.first + step.count; seq++) covered.push(`${step.stage}/${seq}`);
    }
    expect(covered).toEqual(batches.map((b) => `${b.stage}/${b.seq}`));
    expect(steps[total - 1]).toEqual({ kind: "finalize" });
    // A step never spans two stages, so a step's batches are independent and may run in parallel.
    expect(total - 1).toBe(layout.reduce((n, s) => n + Math.ceil(s.batches / STEP_BATCHES), 0));
    const chunks = allChunks(total, CHUNK_STEPS);
    expect(chunks[0]!.start).toBe(0);
    expect(chunks[chunks.length - 1]!.end).toBe(total);
    for (let i = 1; i < chunks.length; i++) expect(chunks[i]!.start).toBe(chunks[i - 1]!.end);
    expect(chunks.every((c) => c.end - c.start >= 1 && c.end - c.start <= CHUNK_STEPS)).toBe(true);
    expect(chunks).toHaveLength(Math.ceil(total / CHUNK_STEPS));
    // Resuming at any chunk boundary gives back exactly that chunk.
    for (const c of chunks) expect(chunkAt(c.start, total, CHUNK_STEPS)).toEqual(c);
    expect(() => chunkAt(total, total, CHUNK_STEPS)).toThrow();
  });

  it("a chain of tasks that crashes at arbitrary steps resumes from its checkpoint and runs each step once", { timeout: 30_000 }, () => {
    const total = steps.length;
    const runs = new Uint8Array(total);
    let checkpoint = 0; // the unit's nextStep, advanced by each step's own transaction
    let seed = 7;
    let tasks = 0;
    let crashes = 0;
    while (checkpoint < total) {
      tasks++;
      // A task (fresh or a Cloud Tasks retry) starts where the checkpoint says.
      const range = chunkAt(checkpoint, total, CHUNK_STEPS);
      expect(range.start).toBe(checkpoint);
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      const crashAfter = seed % 5 === 0 ? seed % (range.end - range.start) : Number.POSITIVE_INFINITY;
      for (let s = range.start, n = 0; s < range.end; s++, n++) {
        if (n === crashAfter) {
          crashes++;
          break;
        }
        runs[s]!++;
        checkpoint = s + 1;
      }
    }
    expect(crashes).toBeGreaterThan(0);
    expect(tasks).toBeGreaterThanOrEqual(Math.ceil(total / CHUNK_STEPS));
    expect(runs.every((n) => n === 1)).toBe(true);
  });

  describe("the brake at this size, at the registry's configured thresholds", () => {
    const registry = JSON.parse(readFileSync(join(__dirname, "../../../policies/versions/v1.json"), "utf8")) as { purge: BrakeLimits };
    const limits = registry.purge;
    const deleteByClass = { orders: ORDERS, messages: ORDERS * MESSAGES_PER_ORDER, users: USERS, tenants: 1, directory: DIRECTORY, feeds: FEED_ITEMS };
    const sizes = { orders: 10_000_000, messages: 90_000_000, users: 5_000_000, tenants: 20_000, directory: 3_000_000, feeds: 2_000_000 };

    it("a million-document tenant purge trips it on the total, not on any class share", () => {
      const r = evaluateBrake(deleteByClass, sizes, limits);
      expect(r.tripped).toBe(true);
      expect(r.total).toBe(TOTAL_PATHS - MASKS);
      expect(r.violations).toEqual([{ kind: "TOTAL", retentionClass: null, count: TOTAL_PATHS - MASKS, classSize: null, limit: limits.brakeMaxDocuments }]);
    });

    it("trips one document past the total limit, not at it", () => {
      expect(evaluateBrake({ orders: limits.brakeMaxDocuments }, sizes, limits).tripped).toBe(false);
      expect(evaluateBrake({ orders: limits.brakeMaxDocuments + 1 }, sizes, limits).violations.map((v) => v.kind)).toEqual(["TOTAL"]);
    });

    it("trips past the class share, not at it, and exempts classes below the minimum size", () => {
      const size = 150_000;
      const atShare = Math.floor(size * limits.brakeMaxShareOfClass);
      expect(atShare).toBeLessThanOrEqual(limits.brakeMaxDocuments);
      expect(evaluateBrake({ messages: atShare }, { messages: size }, limits).tripped).toBe(false);
      const past = evaluateBrake({ messages: atShare + 1 }, { messages: size }, limits);
      expect(past.violations).toEqual([{ kind: "CLASS_SHARE", retentionClass: "messages", count: atShare + 1, classSize: size, limit: limits.brakeMaxShareOfClass }]);
      const small = limits.brakeMinClassSize - 1;
      expect(evaluateBrake({ tenants: small }, { tenants: small }, limits).tripped).toBe(false);
      expect(evaluateBrake({ tenants: limits.brakeMinClassSize }, { tenants: limits.brakeMinClassSize }, limits).tripped).toBe(true);
    });
  });
});
