import { DataKeys } from "../../shred/index";
import {
  emptyTally,
  verifyArchivedPath,
  verifyDeletePath,
  verifyMaskedPath,
  verifyObjectPath,
  verifyRetainedPath,
  type HeldPath,
  type RecordedObjectOutcome,
  type ObservedDoc,
  type RecordedOutcome,
  type VerifyTally,
} from "../rules/verify";
import { compareNames } from "../../kernel/paths";
import { maskResidue } from "../rules/batches";
import { db } from "../../platform/firestore";
import { documentsInRange, existingAmong } from "./probe";
import { archivedDataHash, archiveRef } from "./archive";
import type { DocumentReference } from "firebase-admin/firestore";
import { batchFrom, batchRefsOf, readAll, retainedRef, type BatchDoc, type RetainedRecord, type UnitCheckpoint } from "../store";
import pLimit from "p-limit";
import { isObjectPath, parseObjectPath } from "../../kernel/storage-map";
import { readObject } from "../../platform/storage";

/** Object reads in flight at once while verifying. */
const OBJECT_READS_IN_FLIGHT = 16;

/** Each object's current generation (null: no object has the name), read a few at a time. */
async function observeObjects(paths: readonly string[]): Promise<Map<string, string | null>> {
  const limit = pLimit(OBJECT_READS_IN_FLIGHT);
  const out = new Map<string, string | null>();
  await Promise.all(
    paths.map((p) =>
      limit(async () => {
        const ref = parseObjectPath(p);
        if (!ref) throw new Error(`${p} is not an object path`);
        out.set(p, (await readObject(ref.bucket, ref.name))?.generation ?? null);
      }),
    ),
  );
  return out;
}

function objectOutcomeOf(b: BatchDoc): Map<string, RecordedObjectOutcome> {
  const m = new Map<string, RecordedObjectOutcome>();
  for (const p of b.outcome.deleted) m.set(p, "deleted");
  for (const p of b.outcome.gone) m.set(p, "gone");
  for (const p of b.outcome.changed) m.set(p, "changed");
  for (const h of b.outcome.held) m.set(h.path, "held");
  return m;
}

/** Batch records read per call: each is up to about 100 KB. */
const BATCH_READ_SLICE = 10;

/** A round's retained records, chunk by chunk. */
export async function* roundRetained(cp: UnitCheckpoint): AsyncGenerator<RetainedRecord> {
  for (let i = 0; i < cp.retainedChunks; i++) {
    const snap = await retainedRef(cp.unitKey, cp.planId, i).get();
    if (!snap.exists) throw new Error(`purge record ${snap.ref.path} is missing: the checkpoint names retained items that were never written`);
    yield* (snap.get("items") as RetainedRecord[] | undefined) ?? [];
  }
}

/** A round's batch records (its stages, then the final sweep's), a few at a time. */
export function roundBatches(cp: UnitCheckpoint): AsyncGenerator<BatchDoc> {
  return readBatches([...batchRefsOf(cp, [...cp.layout, ...cp.late])]);
}

/** The named batch records, in order, a few at a time. */
export async function* readBatches(refs: readonly DocumentReference[]): AsyncGenerator<BatchDoc> {
  for (let i = 0; i < refs.length; i += BATCH_READ_SLICE) {
    for (const snap of await db().getAll(...refs.slice(i, i + BATCH_READ_SLICE))) yield batchFrom(snap);
  }
}

/**
 * What verification must know of the whole round before it checks any path: the paths a hold kept (a delete path
 * kept above one of them is documented) and the span of the delete paths (one range scan reads what survived). The
 * finalize gathers it as the final sweep reads the records (late.ts#survivorsAndRoots), plus the late batches that
 * sweep ran, so that verification reads the round's records once more, not twice.
 */
export class RoundFacts {
  readonly heldBy = new Map<string, HeldPath>();
  first: string | null = null;
  last: string | null = null;
  deletePaths = 0;

  /** Takes in one batch record as it stands once its batch has run (or will never run again). */
  note(b: BatchDoc): void {
    for (const h of b.outcome.held) this.heldBy.set(h.path, { path: h.path, holdId: h.holdId, reasonCode: h.reasonCode });
    if (b.kind !== "delete") return;
    for (const { path } of b.items) {
      this.deletePaths++;
      if (this.first === null || compareNames(path, this.first) < 0) this.first = path;
      if (this.last === null || compareNames(path, this.last) > 0) this.last = path;
    }
  }
}

function outcomeOf(b: BatchDoc): Map<string, RecordedOutcome> {
  const m = new Map<string, RecordedOutcome>();
  for (const p of b.outcome.deleted) m.set(p, "deleted");
  for (const p of b.outcome.gone) m.set(p, "gone");
  for (const h of b.outcome.held) m.set(h.path, "held");
  for (const p of b.outcome.deferred) m.set(p, "deferred");
  for (const x of b.outcome.blocked) m.set(x.path, "blocked");
  return m;
}

/**
 * Re-checks the manifest against the data as it is now, one batch at a time: every delete path gone or
 * documented (stopped by a hold, kept above a retained descendant), every path archived first still has its
 * verified, intact archive copy, every retained record present, every masked record masked. `facts`: what the round's
 * records say as a whole (`RoundFacts`, every record noted as it now stands). `visit` sees each record as it is read.
 */
export async function verifyUnit(cp: UnitCheckpoint, facts: RoundFacts, visit: (b: BatchDoc) => void = () => undefined): Promise<VerifyTally> {
  const tally = emptyTally();
  const retained: RetainedRecord[] = [];
  for await (const r of roundRetained(cp)) retained.push(r);
  const retainedPaths = new Set([...retained.map((r) => r.path), ...facts.heldBy.keys()]);
  const { heldBy, first, last } = facts;
  // Existence is all a delete path is checked for. One scan of the range the whole manifest spans reads
  // only what survived; when that range holds many other documents (a sweep over a live collection) each
  // batch scans its own range, or reads its paths by name.
  const survivors = first !== null && last !== null ? await documentsInRange(first, last, Math.max(1_000, facts.deletePaths)) : null;
  // The archive copies are read back by opening their seals: each data key once for the whole unit.
  const keys = new DataKeys();
  for await (const b of roundBatches(cp)) {
    visit(b);
    if (b.kind === "objects") {
      const outcomes = objectOutcomeOf(b);
      const now = await observeObjects([...new Set(b.items.map((i) => i.path))]);
      for (const item of b.items) {
        const generation = now.get(item.path) ?? null;
        verifyObjectPath(item.path, item.version ?? "", { exists: generation !== null, generation }, outcomes.get(item.path), tally, heldBy.get(item.path));
      }
      continue;
    }
    const outcomes = outcomeOf(b);
    if (b.kind === "delete") {
      const existing = survivors ?? (await existingAmong(b.items.map((i) => i.path)));
      for (const item of b.items) {
        const observed: ObservedDoc = { exists: existing.has(item.path), presentFields: [], masked: false };
        verifyDeletePath(item.path, observed, outcomes.get(item.path), retainedPaths, cp.kind === "request", tally, heldBy.get(item.path));
      }
      const archived = b.items.filter((i) => b.archives[i.path] !== undefined);
      const copies = await readAll(archived.map((i) => archiveRef(b.archives[i.path]!).path));
      for (const [k, i] of archived.entries()) {
        const a = copies[k]!;
        const sourcePath: unknown = a.get("sourcePath");
        const recorded: unknown = a.get("sha256");
        verifyArchivedPath(i.path, !existing.has(i.path), {
          exists: a.exists,
          sourcePath: typeof sourcePath === "string" ? sourcePath : null,
          verified: a.get("verified") === true,
          recordedSha256: typeof recorded === "string" ? recorded : null,
          dataSha256: await archivedDataHash(a.data(), a.id, keys),
        }, tally);
      }
      continue;
    }
    const snaps = await readAll(b.items.map((i) => i.path));
    b.items.forEach((item, k) => {
      const s = snaps[k]!;
      const observed: ObservedDoc = {
        exists: s.exists,
        presentFields: maskResidue(item, (f) => s.get(f), cp.subject?.type === "user" ? cp.subject.uid : null),
        masked: s.exists && s.get("maskedAt") !== undefined,
      };
      verifyMaskedPath(item.path, observed, outcomes.get(item.path) === "held" ? (heldBy.get(item.path) ?? null) : null, tally);
    });
  }
  const plainRetained = retained.filter((r) => r.action === "retain" && !isObjectPath(r.path));
  const snaps = await readAll(plainRetained.map((r) => r.path));
  plainRetained.forEach((r, k) =>
    verifyRetainedPath(r.path, { exists: snaps[k]!.exists, presentFields: [], masked: false }, tally, r.deferredByHold ? { path: r.path, holdId: r.holdId ?? null, reasonCode: r.reasonCode } : undefined),
  );
  const retainedObjects = retained.filter((r) => isObjectPath(r.path));
  const objectsNow = await observeObjects(retainedObjects.map((r) => r.path));
  for (const r of retainedObjects) {
    verifyRetainedPath(r.path, { exists: objectsNow.get(r.path) != null, presentFields: [], masked: false }, tally, r.deferredByHold ? { path: r.path, holdId: r.holdId ?? null, reasonCode: r.reasonCode } : undefined);
  }
  return tally;
}
