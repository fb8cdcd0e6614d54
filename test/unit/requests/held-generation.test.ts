import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { heldAtGeneration, purgeMayTake, type HeldJudgement } from "../../../functions/src/requests/rules/requests";

/**
 * A request retained under a hold stores `heldAtGeneration`; a run takes it up again whenever the hold fence reads
 * another generation (docs/HOLD-FENCE.md, "A request retained under a hold resumes after every release").
 */

const retained = (heldAtGeneration: unknown) => ({ state: "RETAINED_UNDER_HOLD", graceEndsAtMs: 0, heldAtGeneration });
const judgement = (over: Partial<HeldJudgement> = {}): HeldJudgement => ({
  decidedGeneration: 3,
  finalGeneration: 5,
  keepers: ["h-1"],
  keptWithoutHoldId: 0,
  activeAtFinal: new Set(["h-1"]),
  ...over,
});

describe("purgeMayTake for a request retained under a hold", () => {
  it("is taken when the fence moved from its generation, and left alone while it reads the same", () => {
    expect(purgeMayTake(retained(4), 0, 4)).toBe(false);
    expect(purgeMayTake(retained(4), 0, 5)).toBe(true);
    expect(purgeMayTake(retained(4), 0, 3)).toBe(true);
  });

  it("is taken when it records no generation: retained by the old rule, whose heldFenceGeneration may postdate a release", () => {
    expect(purgeMayTake(retained(undefined), 0, 4)).toBe(true);
    expect(purgeMayTake({ ...retained(undefined), heldFenceGeneration: 4 } as Parameters<typeof purgeMayTake>[0], 0, 4)).toBe(true);
    expect(purgeMayTake(retained("4"), 0, 4)).toBe(true);
    expect(purgeMayTake(retained(null), 0, 4)).toBe(true);
  });
});

describe("heldAtGeneration", () => {
  it("the finalize generation when every remaining path names a hold still active in the finalize transaction", () => {
    expect(heldAtGeneration(judgement())).toBe(5);
    expect(heldAtGeneration(judgement({ keepers: ["h-1", "h-2"], activeAtFinal: new Set(["h-1", "h-2", "h-3"]) }))).toBe(5);
  });

  it("the round's decided generation when a keeper is gone, a path names no hold, or the keepers were not read", () => {
    expect(heldAtGeneration(judgement({ activeAtFinal: new Set() }))).toBe(3);
    expect(heldAtGeneration(judgement({ keepers: ["h-1", "h-2"] }))).toBe(3);
    expect(heldAtGeneration(judgement({ keptWithoutHoldId: 1 }))).toBe(3);
    expect(heldAtGeneration(judgement({ keepers: [], keptWithoutHoldId: 2 }))).toBe(3);
    expect(heldAtGeneration(judgement({ activeAtFinal: null }))).toBe(3);
  });
});

/**
 * A model of every interleaving of one round with hold placements and releases. The fence moves on every
 * placement and release. The plan reads the fence, then (maybe after other events) the active holds; its held
 * decisions use that snapshot. A batch's held decision uses the holds active when it runs (it reads the fence and
 * the holds in one transaction). A held path names its hold, or, kept by a hold's marks, none. Finalize reads the
 * fence and which keepers are active in one transaction, and stores `heldAtGeneration`. Then anything may happen.
 * The property: once every hold that kept part of the request is released, the fence never reads its generation.
 */
type Step =
  | { kind: "place" }
  | { kind: "release"; pick: number }
  | { kind: "planHolds" }
  | { kind: "decide"; pick: number; byMarks: boolean; fromPlan: boolean };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.constant<Step>({ kind: "place" }),
  fc.record({ kind: fc.constant("release" as const), pick: fc.nat(7) }),
  fc.constant<Step>({ kind: "planHolds" }),
  fc.record({ kind: fc.constant("decide" as const), pick: fc.nat(7), byMarks: fc.boolean(), fromPlan: fc.boolean() }),
);

interface World {
  fence: number;
  next: number;
  active: Set<string>;
}

function apply(w: World, s: Extract<Step, { kind: "place" | "release" }>): void {
  if (s.kind === "place") {
    w.active.add(`h-${w.next++}`);
    w.fence++;
    return;
  }
  const ids = [...w.active];
  if (ids.length === 0) return;
  w.active.delete(ids[s.pick % ids.length]!);
  w.fence++;
}

describe("a request retained under a hold resumes after every release, in any interleaving", () => {
  it("no run after the last keeper's release reads the stored generation; with nothing changed, no run takes it", () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom<Step>({ kind: "place" }), { maxLength: 3 }),
        fc.array(step, { maxLength: 25 }),
        fc.array(fc.oneof(fc.constant<Step>({ kind: "place" }), fc.record({ kind: fc.constant("release" as const), pick: fc.nat(7) })), { maxLength: 12 }),
        (setup, during, after) => {
          const w: World = { fence: 0, next: 0, active: new Set() };
          for (const s of setup) apply(w, s as Extract<Step, { kind: "place" }>);
          // The plan reads the fence first; its hold snapshot comes at the first planHolds (or at once).
          const decidedGeneration = w.fence;
          let planSnapshot: string[] | null = null;
          const truly = new Set<string>();
          const keepers: string[] = [];
          let keptWithoutHoldId = 0;
          for (const s of during) {
            if (s.kind === "place" || s.kind === "release") apply(w, s);
            else if (s.kind === "planHolds") planSnapshot ??= [...w.active];
            else {
              const pool = s.fromPlan ? (planSnapshot ??= [...w.active]) : [...w.active];
              if (pool.length === 0) continue;
              const id = pool[s.pick % pool.length]!;
              truly.add(id);
              if (s.byMarks) keptWithoutHoldId++;
              else if (!keepers.includes(id)) keepers.push(id);
            }
          }
          if (truly.size === 0) return;
          // Finalize: one transaction reads the fence and the keepers' records, and writes the request.
          const stored = heldAtGeneration({ decidedGeneration, finalGeneration: w.fence, keepers, keptWithoutHoldId, activeAtFinal: new Set(keepers.filter((k) => w.active.has(k))) });
          const untouched = keptWithoutHoldId === 0 && keepers.every((k) => w.active.has(k));
          if (untouched) expect(purgeMayTake(retained(stored), 0, w.fence)).toBe(false);
          const check = () => {
            if ([...truly].every((id) => !w.active.has(id))) expect(purgeMayTake(retained(stored), 0, w.fence), `fence ${w.fence}, stored ${stored}`).toBe(true);
          };
          check();
          for (const s of after) {
            apply(w, s as Extract<Step, { kind: "place" | "release" }>);
            check();
          }
          // And whatever else happens, releasing every keeper left frees it.
          for (const id of truly) if (w.active.has(id)) apply(w, { kind: "release", pick: [...w.active].indexOf(id) });
          check();
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it("the old rule's counterexample: the generation read at finalize, after a release mid-round, is never read again", () => {
    // Planned under h-0 at generation 1, released mid-round (generation 2), finalize reads 2: stored 2, and no
    // later run reads anything else while nothing changes.
    const old = 2;
    expect(purgeMayTake(retained(old), 0, 2)).toBe(false);
    expect(heldAtGeneration({ decidedGeneration: 1, finalGeneration: 2, keepers: ["h-0"], keptWithoutHoldId: 0, activeAtFinal: new Set() })).toBe(1);
  });
});
