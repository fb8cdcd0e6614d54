import { DomainError, notFound } from "../kernel/errors";
import { PRIMARY_CELL } from "../kernel/policy";
import { COLLECTIONS, db, inCell } from "../platform/firestore";
import { log } from "../platform/logs";
import { registryPolicy } from "../platform/registry";
import {
  applyHoldNow,
  holdFromFirestore,
  placeHold as placeInCell,
  releaseHoldById as releaseInCell,
  type ApplyHold,
  type HoldApplyOptions,
  type PlaceHoldInput,
  type ReleaseHoldInput,
} from "./service";
import { assertReleaseAllowed } from "./rules";

/**
 * Holds across several governed databases (docs/decisions/0036-several-databases.md). A hold lives in the cell of
 * its target (`database`, logical; default the primary) and is fenced there exactly as in one database: a hold
 * record, the cell's fence and the cell's evidence, all in one of that cell's transactions. A hold on the scope's
 * record holds the scope in every cell that has scope data: one hold (one id), placed in the primary first (the hold
 * of record, listing its other cells) and then in each of them, and released in the others first and the primary
 * last. No transaction spans two cells, so each step is its own, and each is resumable.
 */

const holdsCol = () => db().collection(COLLECTIONS.retentionHolds);

/** A hold's target database as a caller names it: a cell of the registry in force (UNKNOWN_DATABASE otherwise). */
export function holdCell(database: string | undefined): string {
  const cell = database ?? PRIMARY_CELL;
  if (!registryPolicy().hasCell(cell)) {
    throw new DomainError("invalid-argument", "UNKNOWN_DATABASE", `The registry governs no database named ${cell}.`, { databases: registryPolicy().cells().join(", ") });
  }
  return cell;
}

/** The other cells a hold on `targetPath` in `cell` is placed in too: a scope record's, in every cell with scope data. */
export function scopeHoldCells(targetPath: string, cell: string): string[] {
  const whole = registryPolicy();
  return cell === PRIMARY_CELL && whole.scopeOfRecord(targetPath) !== null ? whole.cellsWithScopeData() : [];
}

/**
 * Places a hold (holds/service.ts#placeHold) in its target's cell. A hold on the scope's record is placed in the
 * primary first, with the list of its other cells and `cellsPending`, then in each of them under the same id, then
 * `cellsPending` is cleared. What an interrupted placement leaves: the hold ACTIVE in the primary (protecting the
 * scope's subtree there, listed as still placing), and in some of the other cells; until it is finished, the other
 * cells' scope data is not yet held. It is finished by placing it again (the same placer, reason, target and
 * releaseAfter: placement is idempotent, and returns the same hold), or by the nightly purge's first step
 * (`resumeHoldPlacements`), which runs before any cell's purge.
 */
export async function placeHold(input: PlaceHoldInput & { database?: string }, apply: ApplyHold = applyHoldNow): Promise<{ holdId: string }> {
  const { database, ...hold } = input;
  const cell = holdCell(database);
  const others = scopeHoldCells(hold.targetPath, cell);
  if (others.length === 0) return inCell(cell, () => placeInCell(hold, apply));
  const placed = await inCell(PRIMARY_CELL, () => placeInCell({ ...hold, cells: others }, apply));
  await placeCopies(placed.holdId, apply);
  return placed;
}

/**
 * Places the copies of a hold of record in its other cells (each idempotent by the hold's id), then clears its
 * `cellsPending`. A hold of record released meanwhile places nothing more: its release releases what was placed.
 */
async function placeCopies(holdId: string, apply: ApplyHold): Promise<string[]> {
  const snap = await inCell(PRIMARY_CELL, () => holdsCol().doc(holdId).get());
  if (!snap.exists || snap.get("state") !== "ACTIVE" || snap.get("releasing") === true) return [];
  const record = holdFromFirestore(snap);
  const cells = (snap.get("cells") as string[] | undefined) ?? [];
  for (const cell of cells) {
    await inCell(cell, () =>
      placeInCell(
        {
          targetPath: record.targetPath,
          reasonCode: record.reasonCode,
          releaseAfterMs: record.releaseAfterMs,
          ...(record.note !== undefined ? { note: record.note } : {}),
          actor: { type: "staff", id: record.placedBy },
          nowMs: record.placedAtMs,
          holdId,
          cellOf: PRIMARY_CELL,
        },
        apply,
      ),
    );
  }
  if (snap.get("cellsPending") === true) await inCell(PRIMARY_CELL, () => holdsCol().doc(holdId).update({ cellsPending: false }));
  log.info("hold.cells.placed", { holdId, cells });
  return cells;
}

/** Finishes every hold of record whose placement in its other cells was interrupted (run first by the nightly purge). */
export async function resumeHoldPlacements(apply: ApplyHold = applyHoldNow): Promise<string[]> {
  if (registryPolicy().cells().length === 1) return [];
  const snap = await inCell(PRIMARY_CELL, () => holdsCol().where("cellsPending", "==", true).select("state", "releasing").get());
  for (const d of snap.docs) {
    // A hold released before its copies were all placed places no more; its release released what was placed.
    if (d.get("state") !== "ACTIVE" || d.get("releasing") === true) await inCell(PRIMARY_CELL, () => d.ref.update({ cellsPending: false }));
    else await placeCopies(d.id, apply);
  }
  return snap.docs.map((d) => d.id);
}

/** The cells that hold a record under this id (point reads), the primary first. */
async function cellsHolding(holdId: string): Promise<string[]> {
  const found: string[] = [];
  for (const cell of registryPolicy().cells()) if ((await inCell(cell, () => holdsCol().doc(holdId).get())).exists) found.push(cell);
  return found;
}

/**
 * Releases a hold (holds/service.ts#releaseHoldById) in every cell it was placed in. `database` names its cell;
 * without it the hold is looked for in every cell (its id is the same wherever it is). A hold of record with copies
 * is checked first (the two-person rule, releaseAfter: the same facts in every copy), then released in its other
 * cells, and in the primary last: an interrupted release leaves the hold of record ACTIVE and listed, and releasing
 * it again resumes (a copy already RELEASED is skipped). Returns the documents let go, over all cells.
 */
export async function releaseHoldById(input: ReleaseHoldInput & { database?: string }, opts: HoldApplyOptions = {}): Promise<{ holdId: string; released: number }> {
  const { database, ...release } = input;
  const cells = database !== undefined ? [holdCell(database)] : await cellsHolding(release.holdId);
  if (cells.length === 0) throw notFound("HOLD_NOT_FOUND", "No such hold.");
  const ordered = [...cells.filter((c) => c !== PRIMARY_CELL), ...cells.filter((c) => c === PRIMARY_CELL)];
  if (ordered.length > 1) {
    // The decision is the hold of record's (its copies carry the same placer, reason and releaseAfter): refused
    // there, nothing is released anywhere.
    const hold = holdFromFirestore(await inCell(ordered[ordered.length - 1]!, () => holdsCol().doc(release.holdId).get()));
    assertReleaseAllowed(hold, registryPolicy().holdReason(hold.reasonCode), release.actor.id, release.nowMs);
  }
  let released = 0;
  for (const cell of ordered) {
    const r = await inCell(cell, async () => {
      const snap = await holdsCol().doc(release.holdId).get();
      if (!snap.exists || (ordered.length > 1 && snap.get("state") !== "ACTIVE")) return 0;
      return (await releaseInCell(release, opts)).released;
    });
    released += r;
  }
  if (ordered.length > 1) log.info("hold.cells.released", { holdId: release.holdId, cells: ordered });
  return { holdId: release.holdId, released };
}

