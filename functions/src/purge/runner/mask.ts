import { FieldValue } from "firebase-admin/firestore";
import { assertTransition, canTransition, isLifecycleState, type LifecycleState } from "../../kernel/lifecycle";
import { toTimestamp } from "../../platform/governed-doc";
import { db } from "../../platform/firestore";
import { maskedFieldNames, maskResidue } from "../rules/batches";
import { holdOf } from "../rules/decide";
import { batchFrom, factsOf, settledPaths, type BatchOutcome, type UnitCheckpoint } from "../store";
import type { StepEnv } from "./env";
import { inBatch, type BatchSpec } from "./step";

/** The state a masked record returns to: the state before the request soft-deleted it, else ACTIVE. */
function restoredState(current: LifecycleState, preDeleteState: unknown): LifecycleState {
  if (current !== "SOFT_DELETED") return current;
  const target: LifecycleState = isLifecycleState(preDeleteState) && canTransition("SOFT_DELETED", preDeleteState) ? preDeleteState : "ACTIVE";
  assertTransition(current, target);
  return target;
}

/**
 * Execute step for a mask batch: records the data map keeps (orders kept for finance) lose the subject's
 * personal fields, get `maskedAt`, and return to their state before the request (they stay in use); a record
 * the subject leaves (a `removeFromArray` entry: a chat) loses the subject's uid from its array field. A held
 * record is not touched. Its evidence names the paths and the field names, never values.
 */
export async function maskBatch(cp: UnitCheckpoint, spec: Omit<BatchSpec, "inPoint" | "afterPoint">, env: StepEnv): Promise<BatchOutcome | null> {
  const before = batchFrom(await spec.ref.get());
  if (before.complete) return before.outcome;
  const done = await inBatch(cp, { ...spec, afterPoint: "afterExecute" }, env, async ({ tx, batch, holds }) => {
    const settled = settledPaths(batch.outcome);
    const items = batch.items.filter((i) => !settled.has(i.path));
    const snaps = items.length > 0 ? await tx.getAll(...items.map((i) => db().doc(i.path))) : [];
    const o = batch.outcome;
    const maskedNow: string[] = [];
    const fieldNames = new Set<string>();
    const uid = cp.subject?.type === "user" ? cp.subject.uid : null;
    items.forEach((item, k) => {
      const snap = snaps[k]!;
      const facts = factsOf(snap);
      if (!snap.exists) {
        o.gone.push(item.path);
        return;
      }
      const hold = holdOf(facts, holds.holds);
      if (hold) {
        o.held.push({ path: item.path, ...hold });
        return;
      }
      const fields = item.fields ?? [];
      const pull = item.pull ?? [];
      if (pull.length > 0 && uid === null) throw new Error(`MASK_WITHOUT_USER: ${item.path} leaves an array, but the unit's subject is no user`);
      if (maskResidue(item, (f) => snap.get(f), uid).length === 0 && snap.get("maskedAt") !== undefined) {
        o.masked.push(item.path);
        return;
      }
      const state = isLifecycleState(facts.lifecycleState) ? facts.lifecycleState : null;
      if (state === null) throw new Error(`MASK_INVALID_STATE: ${item.path} has no valid lifecycle state`);
      const to = restoredState(state, snap.get("preDeleteState"));
      const update: Record<string, unknown> = { maskedAt: toTimestamp(env.nowMs) };
      for (const f of fields) update[f] = FieldValue.delete();
      for (const f of pull) update[f] = FieldValue.arrayRemove(uid);
      if (to !== state) {
        update.lifecycleState = to;
        update.softDeletedAt = FieldValue.delete();
        update.preDeleteState = FieldValue.delete();
        update.deletionRequestId = FieldValue.delete();
      }
      tx.update(snap.ref, update);
      maskedFieldNames(item).forEach((f) => fieldNames.add(f));
      o.masked.push(item.path);
      maskedNow.push(item.path);
    });
    return {
      outcome: o,
      complete: true,
      evidence:
        maskedNow.length > 0
          ? [
              {
                action: "PURGE_MASK",
                decision: { reason: "AUTHORIZED_BY_POLICY", dataMapAction: "mask" },
                paths: maskedNow,
                counts: { masked: maskedNow.length, batch: spec.ordinal },
                detail: { fields: [...fieldNames].sort().join(",") },
              },
            ]
          : [],
      paths: maskedNow,
    };
  });
  return done ? done.outcome : null;
}
