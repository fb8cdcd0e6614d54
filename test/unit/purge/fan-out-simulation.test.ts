import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { allChunks, chunkAt, needsFanOut, stepsOf, type PurgeBatch, type PurgeStep, type StageLayout } from "../../../functions/src/purge/rules/batches";
import { evaluateBrake, type BrakeLimits } from "../../../functions/src/purge/rules/brake";
import { documentDepth, parentDocumentPath } from "../../../functions/src/kernel/paths";
import { cutInOrder } from "../../helpers/batches";
import { TENANT, tenantDeleteByClass, tenantManifest } from "../../../bench/night/tenant-manifest";

/**
 * The fan-out logic at internet scale, with no writes: a tenant purge whose manifest holds 1,000,000 paths
 * (bench/night/tenant-manifest.ts: orders with messages, users, external copies, masked records; the night
 * simulation, bench/night/, times the same tenant) streams through the batch cutter into
 * batches, stages, steps (groups of batches) and task chunks, and a chain of tasks that crashes at
 * arbitrary points is replayed from its checkpoints. The brake is evaluated at the registry's configured
 * thresholds at that size.
 */

const { orders: ORDERS, messagesPerOrder: MESSAGES_PER_ORDER, users: USERS, masks: MASKS } = TENANT;
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

const input = tenantManifest();
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
    const deleteByClass = tenantDeleteByClass();
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
