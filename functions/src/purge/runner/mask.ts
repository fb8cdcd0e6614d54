import { EVIDENCE_TX, openEvidence } from "../../evidence/index";
import { FieldValue } from "firebase-admin/firestore";
import { holdOf } from "../rules/decide";
import { assertTransition, canTransition, isLifecycleState, type LifecycleState } from "../../kernel/lifecycle";
import { db } from "../../platform/firestore";
import { toTimestamp } from "../../platform/governed-doc";
import { fenceStep, writeCheckpoint } from "./fence";
import { fire, purgeEvidence, type StepEnv } from "./env";
import { batchFrom, batchRef, factsOf, settledPaths, type UnitCheckpoint } from "../store";

/** The state a masked record returns to: the state before the request soft-deleted it, else ACTIVE. */
function restoredState(current: LifecycleState, preDeleteState: unknown): LifecycleState {
  if (current !== "SOFT_DELETED") return current;
  const target: LifecycleState = isLifecycleState(preDeleteState) && canTransition("SOFT_DELETED", preDeleteState) ? preDeleteState : "ACTIVE";
  assertTransition(current, target);
  return target;
}

/**
 * Execute step for a mask batch: records the data map keeps (orders kept for finance) lose the subject's
 * personal fields, get `maskedAt`, and return to their state before the request (they stay in use). A held
 * record is not touched. One transaction with its evidence (the paths and the field names, never values).
 */
export async function maskStep(cp: UnitCheckpoint, step: number, batchIndex: number, env: StepEnv): Promise<void> {
  const bRef = batchRef(cp.unitKey, cp.round, batchIndex);
  const masked = await db().runTransaction(async (tx) => {
    const now = await fenceStep(tx, cp, env, step);
    if (!now) return null;
    const batch = batchFrom(await tx.get(bRef));
    const settled = settledPaths(batch.outcome);
    const items = batch.items.filter((i) => !settled.has(i.path));
    const snaps = items.length > 0 ? await tx.getAll(...items.map((i) => db().doc(i.path))) : [];
    const { holds } = await env.holdView.inTx(tx);
    const evidence = await openEvidence(tx);
    const o = batch.outcome;
    const maskedNow: string[] = [];
    const fieldNames = new Set<string>();
    items.forEach((item, k) => {
      const snap = snaps[k]!;
      const facts = factsOf(snap);
      if (!snap.exists) {
        o.gone.push(item.path);
        return;
      }
      const hold = holdOf(facts, holds);
      if (hold) {
        o.held.push({ path: item.path, ...hold });
        return;
      }
      const fields = item.fields ?? [];
      const present = fields.filter((f) => snap.get(f) !== undefined);
      if (present.length === 0 && snap.get("maskedAt") !== undefined) {
        o.masked.push(item.path);
        return;
      }
      const state = isLifecycleState(facts.lifecycleState) ? facts.lifecycleState : null;
      if (state === null) throw new Error(`MASK_INVALID_STATE: ${item.path} has no valid lifecycle state`);
      const to = restoredState(state, snap.get("preDeleteState"));
      const update: Record<string, unknown> = { maskedAt: toTimestamp(env.nowMs) };
      for (const f of fields) update[f] = FieldValue.delete();
      if (to !== state) {
        update.lifecycleState = to;
        update.softDeletedAt = FieldValue.delete();
        update.preDeleteState = FieldValue.delete();
        update.deletionRequestId = FieldValue.delete();
      }
      tx.update(snap.ref, update);
      fields.forEach((f) => fieldNames.add(f));
      o.masked.push(item.path);
      maskedNow.push(item.path);
    });
    tx.update(bRef, { outcome: o, complete: true });
    writeCheckpoint(tx, cp, env, { nextStep: step + 1, "counts.masked": FieldValue.increment(maskedNow.length) });
    if (maskedNow.length > 0) {
      evidence.append(
        purgeEvidence(env, cp, {
          action: "PURGE_MASK",
          decision: { reason: "AUTHORIZED_BY_POLICY", dataMapAction: "mask" },
          paths: maskedNow,
          counts: { masked: maskedNow.length, batch: batchIndex },
          detail: { fields: [...fieldNames].sort().join(",") },
        }),
      );
    }
    return maskedNow;
  }, EVIDENCE_TX);
  if (masked) await fire(env, { point: "afterExecute", unitKey: cp.unitKey, round: cp.round, step, batch: batchIndex, paths: masked });
}
