import { EVIDENCE_TX, openEvidence } from "../../evidence/index";
import { FieldValue } from "firebase-admin/firestore";
import { decideMark } from "../rules/decide";
import { db } from "../../platform/firestore";
import { toTimestamp } from "../../platform/governed-doc";
import { fenceStep, writeCheckpoint } from "./fence";
import { fire, purgeEvidence, type StepEnv } from "./env";
import { batchFrom, batchRef, claimsActiveInTx, factsOf, readFactsInTx, type UnitCheckpoint } from "../store";
import { policy } from "../../platform/registry";

/**
 * Mark step: the decision is written down before anything is deleted. Each eligible document of the
 * batch moves to PURGE_ELIGIBLE (through the state machine) and carries `purgeDecision`, in one
 * transaction with the batch's evidence and the checkpoint. Holds are read in the same transaction.
 */
export async function markStep(cp: UnitCheckpoint, step: number, batchIndex: number, env: StepEnv): Promise<void> {
  const batch = batchFrom(await batchRef(cp.unitKey, cp.round, batchIndex).get());
  const pol = policy();
  const marked = await db().runTransaction(async (tx) => {
    const now = await fenceStep(tx, cp, env, step);
    if (!now) return null;
    if (batch.kind !== "delete") {
      writeCheckpoint(tx, cp, env, { nextStep: step + 1 });
      return [];
    }
    // Independent reads go out together: the fence above has opened the transaction.
    const [snaps, view, evidence] = await Promise.all([readFactsInTx(tx, batch.items.map((i) => i.path)), env.holdView.inTx(tx), openEvidence(tx)]);
    const facts = snaps.map(factsOf);
    const claimActive = await claimsActiveInTx(tx, facts, cp.unitKey);
    const ctx = { holds: view.holds, workflowEligible: cp.kind === "request", policy: pol, nowMs: env.nowMs };
    const paths: string[] = [];
    for (const f of facts) {
      const action = decideMark(f, cp, ctx, batch.archives[f.path] !== undefined, claimActive);
      if (action.kind !== "mark") continue;
      tx.update(db().doc(f.path), {
        lifecycleState: "PURGE_ELIGIBLE",
        // Soft-delete marks belonged to the request's undo; past this point there is no undo.
        purgeDecision: {
          allowed: true,
          reason: "AUTHORIZED_BY_POLICY",
          policyVersion: pol.version,
          retentionClass: f.retentionClass,
          decidedAt: toTimestamp(env.nowMs),
          decidedBy: { type: env.actor.type, id: env.actor.id },
          requestId: cp.requestId,
          manifestHash: cp.manifestHash,
          unitKey: cp.unitKey,
          round: cp.round,
          from: action.from,
          route: action.route,
        },
      });
      paths.push(f.path);
    }
    writeCheckpoint(tx, cp, env, { nextStep: step + 1, "counts.marked": FieldValue.increment(paths.length) });
    if (paths.length > 0) {
      evidence.append(
        purgeEvidence(env, cp, {
          action: "PURGE_ELIGIBLE_MARKED",
          decision: { reason: "AUTHORIZED_BY_POLICY" },
          paths,
          counts: { marked: paths.length, batch: batchIndex },
        }),
      );
    }
    return paths;
  }, EVIDENCE_TX);
  if (marked) await fire(env, { point: "afterMark", unitKey: cp.unitKey, round: cp.round, step, batch: batchIndex, paths: marked });
}
