import { randomUUID } from "node:crypto";
import pLimit from "p-limit";
import { decideObject, mayStartDelete, openWindow, type WindowItem } from "../../kernel/delete-window";
import { objectLabel, parseObjectPath } from "../../kernel/storage-map";
import { deleteWindowRef, windowFrom } from "../../holds/index";
import { log } from "../../platform/logs";
import { deleteObjectIfUnchanged, storageSettings, type DeleteOutcome } from "../../platform/storage";
import type { PurgeItem } from "../rules/batches";
import { batchFrom, settledPaths, type BatchOutcome, type UnitCheckpoint } from "../store";
import { fire, type StepEnv } from "./env";
import { inBatch, type BatchDecisionResult, type BatchSpec } from "./step";

/**
 * An object batch (docs/HOLD-FENCE.md, "Cloud Storage objects: the delete window"). An object delete cannot join
 * a Firestore transaction, so a batch of objects runs in three steps, each window of deletes bounded in time:
 * 1. one transaction (the batch helper's: lease, checkpoint, batch record, hold fence and the holds of its
 *    generation) decides each unsettled object again (held when a hold record covers its heldWith document) and
 *    opens a delete window in the same commit: `retentionJobs/storage-windows/open/{unit}__{batch}`, naming the
 *    hold targets that cover the objects to delete (`covers`) and its end, `deleteByMs = now + window`;
 * 2. the runner deletes each object with the adapter's generation-checked delete, starting a delete only while
 *    the window has more than the margin (the delete's timeout and the clocks' allowance) left;
 * 3. one transaction records each object's outcome (deleted, gone, changed, held), the PURGE_OBJECTS evidence
 *    naming each as `gs://bucket/name#generation`, and closes the window (removes it).
 * What a window did not get to stays unsettled and is decided again in a new window. A hold placement that covers
 * an open window records HOLD_PLACED only once the window is closed or past its end (holds/service.ts).
 */

/** Deletes of one window in flight at once (each a read and a delete request). */
const DELETES_IN_FLIGHT = 8;
/** Windows in a row that may settle nothing (a stalled runner, a window too short) before the batch gives up and throws (the step is retried). */
const MAX_IDLE_WINDOWS = 3;

/** The window's id: one per batch record, so a new opening of the same batch replaces an expired one. */
export const windowIdOf = (unitKey: string, batchId: string): string => `${unitKey}__${batchId}`;

interface Opened {
  token: string;
  windowId: string;
  deleteByMs: number;
  decidedGeneration: number;
  toDelete: PurgeItem[];
  held: { path: string; generation: string; holdId: string; reasonCode: string }[];
}

type ObjectResult = { item: PurgeItem; result: DeleteOutcome };

export async function objectBatch(cp: UnitCheckpoint, spec: Omit<BatchSpec, "inPoint" | "afterPoint">, env: StepEnv): Promise<BatchOutcome | null> {
  const hook = { unitKey: cp.unitKey, round: cp.round, step: spec.step, batch: spec.ordinal };
  let idle = 0;
  for (;;) {
    const before = batchFrom(await spec.ref.get());
    if (before.complete) return before.outcome;
    const windowMs = storageSettings.windowMs();
    const marginMs = storageSettings.marginMs();
    const timeoutMs = storageSettings.deleteTimeoutMs();
    let opened: Opened | null = null;
    const decided = await inBatch(cp, spec, env, ({ tx, batch, holds }) => {
      const settled = settledPaths(batch.outcome);
      const items = uniqueUnsettled(batch.items, settled);
      const held: Opened["held"] = [];
      const toDelete: PurgeItem[] = [];
      for (const item of items) {
        const d = decideObject(windowItem(item), holds.holds);
        if (d.verdict === "held") held.push({ path: item.path, generation: item.version ?? "", holdId: d.holdId, reasonCode: d.reasonCode });
        else toDelete.push(item);
      }
      if (toDelete.length === 0) {
        // Nothing to delete: the decision is the outcome, recorded with its evidence in this commit.
        return Promise.resolve(closeOutcome(batch.items, batch.outcome, spec.ordinal, batch.stage, holds.generation, null, held, []));
      }
      const token = randomUUID();
      const windowId = windowIdOf(cp.unitKey, spec.ref.id);
      const window = openWindow({ token, unitKey: cp.unitKey, batch: spec.ref.id, decidedGeneration: holds.generation, nowMs: env.holder.clock(), windowMs, toDelete: toDelete.map(windowItem) });
      // `set`, not `create`: an earlier opening of this batch that expired without closing is replaced.
      tx.set(deleteWindowRef(windowId), window);
      opened = { token, windowId, deleteByMs: window.deleteByMs, decidedGeneration: holds.generation, toDelete, held };
      return Promise.resolve({ outcome: batch.outcome, complete: false, evidence: [], paths: toDelete.map((i) => i.path) });
    });
    if (decided === null) return null;
    if (decided.complete) return decided.outcome;
    const win = opened as Opened | null;
    if (win === null) throw new Error(`object batch ${spec.ref.id}: the decision neither completed nor opened a window`);
    await fire(env, { point: "inObjectWindow", ...hook, paths: win.toDelete.map((i) => i.path) });

    const mayStart = (): boolean => mayStartDelete(env.holder.clock(), win.deleteByMs, marginMs);
    const results: ObjectResult[] = [];
    const limit = pLimit(DELETES_IN_FLIGHT);
    await Promise.all(
      win.toDelete.map((item) =>
        limit(async () => {
          if (!mayStart()) return;
          await fire(env, { point: "beforeObjectDelete", ...hook, paths: [item.path] });
          const ref = refOf(item);
          const result = await deleteObjectIfUnchanged(ref, { mayStart, timeoutMs });
          if (result.outcome !== "not-started") results.push({ item, result });
        }),
      ),
    );
    await fire(env, { point: "afterObjectDeletes", ...hook, paths: results.filter((r) => r.result.outcome === "deleted").map((r) => r.item.path) });

    const closed = await inBatch(cp, { ...spec, afterPoint: "afterExecute" }, env, async ({ tx, batch }) => {
      const ref = deleteWindowRef(win.windowId);
      const current = windowFrom(await tx.get(ref));
      if (current?.token === win.token) tx.delete(ref);
      return closeOutcome(batch.items, batch.outcome, spec.ordinal, batch.stage, win.decidedGeneration, win.windowId, win.held, results);
    });
    if (closed === null) return null;
    const expired = results.length < win.toDelete.length;
    if (expired) log.warn("purge.objects.window_expired", { unitKey: cp.unitKey, batch: spec.ref.id, attempted: results.length, planned: win.toDelete.length });
    log.info("purge.objects.done", { unitKey: cp.unitKey, batch: spec.ref.id, deleted: results.filter((r) => r.result.outcome === "deleted").length, complete: closed.complete });
    if (closed.complete) return closed.outcome;
    idle = results.length + win.held.length === 0 ? idle + 1 : 0;
    if (idle >= MAX_IDLE_WINDOWS) throw new Error(`OBJECT_WINDOW_STALLED: ${spec.ref.id}: ${MAX_IDLE_WINDOWS} delete windows in a row ended before any delete started`);
  }
}

/** An object item's ref: its bucket and name from its path, its generation the one decided on. */
function refOf(item: PurgeItem): { bucket: string; name: string; generation: string } {
  const parsed = parseObjectPath(item.path);
  if (!parsed || item.version === undefined) throw new Error(`PURGE_RECORD_MISMATCH: ${item.path} is not an object item with a generation`);
  return { ...parsed, generation: item.version };
}

const windowItem = (item: PurgeItem): WindowItem => {
  if (item.heldWith === undefined) throw new Error(`PURGE_RECORD_MISMATCH: object item ${item.path} names no heldWith document`);
  return { path: item.path, generation: item.version ?? "", heldWith: item.heldWith };
};

/** The batch's items not settled yet, each once. */
function uniqueUnsettled(items: readonly PurgeItem[], settled: ReadonlySet<string>): PurgeItem[] {
  const seen = new Set<string>();
  return items.filter((i) => {
    if (settled.has(i.path) || seen.has(i.path)) return false;
    seen.add(i.path);
    return true;
  });
}

/**
 * The outcome of a window (or of a decision that found nothing to delete) and its one PURGE_OBJECTS entry: every
 * object it settled, each as `gs://bucket/name#generation` with its outcome in `detail.objects`, the paths
 * (`gs://bucket/name`, what `retention explain` looks up) in `paths`. The fence generation it records is the one the
 * decision read (`decidedGeneration`): the ledger's order of a hold against the deletes (docs/HOLD-FENCE.md).
 */
function closeOutcome(
  items: readonly PurgeItem[],
  o: BatchOutcome,
  ordinal: number,
  stage: string,
  decidedGeneration: number,
  windowId: string | null,
  held: Opened["held"],
  results: readonly ObjectResult[],
): BatchDecisionResult {
  const lines: string[] = [];
  const counts = { deleted: 0, gone: 0, changed: 0, held: 0 };
  for (const h of held) {
    o.held.push({ path: h.path, holdId: h.holdId, reasonCode: h.reasonCode });
    lines.push(`${objectLabel({ ...parseObjectPath(h.path)!, generation: h.generation })} held ${h.holdId}`);
    counts.held++;
  }
  for (const { item, result } of results) {
    const label = objectLabel(refOf(item));
    switch (result.outcome) {
      case "deleted":
        o.deleted.push(item.path);
        lines.push(`${label} deleted`);
        counts.deleted++;
        break;
      case "gone":
        o.gone.push(item.path);
        lines.push(`${label} gone`);
        counts.gone++;
        break;
      case "changed":
        o.changed.push(item.path);
        lines.push(`${label} changed${result.current ? ` to #${result.current.generation}` : ""}`);
        counts.changed++;
        break;
      case "held": {
        const holdId = result.current.holdIds[0] ?? null;
        o.held.push({ path: item.path, holdId, reasonCode: "LEGAL_HOLD" });
        lines.push(`${label} held ${holdId ?? "storage-hold"}`);
        counts.held++;
        break;
      }
      case "not-started":
        break;
    }
  }
  const settled = settledPaths(o);
  const paths = [...held.map((h) => h.path), ...results.filter((r) => r.result.outcome !== "not-started").map((r) => r.item.path)];
  return {
    outcome: o,
    // A window that ended before every delete started leaves the rest for the next window.
    complete: items.every((i) => settled.has(i.path)),
    evidence:
      lines.length === 0
        ? []
        : [
            {
              action: "PURGE_OBJECTS",
              decision: { reason: "AUTHORIZED_BY_POLICY" },
              paths,
              counts: { ...counts, batch: ordinal },
              detail: {
                stage,
                objects: lines.join("\n"),
                fenceGeneration: decidedGeneration,
                decidedGeneration,
                ...(windowId ? { window: windowId } : {}),
              },
            },
          ],
    paths: results.filter((r) => r.result.outcome === "deleted").map((r) => r.item.path),
  };
}

