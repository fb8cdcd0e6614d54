import { db } from "../../platform/firestore";
import { toTimestamp } from "../../platform/governed-doc";
import { policy } from "../../platform/registry";
import { decideMark } from "../rules/decide";
import { claimsActiveInTx, factsOf, readFactsInTx, type UnitCheckpoint } from "../store";
import type { StepEnv } from "./env";
import { inStep, type StepDecision } from "./step";

/**
 * Mark step: the decision is written down before anything is deleted. Each eligible document of a delete
 * batch moves to PURGE_ELIGIBLE (through the state machine) and carries `purgeDecision`: the unit, the round
 * and the policy version that decided, the only authority a later delete accepts. Mask batches are not
 * marked (their records stay).
 */
export function markStep(cp: UnitCheckpoint, step: number, batchIndex: number, env: StepEnv): Promise<StepDecision | null> {
  const pol = policy();
  return inStep(cp, { step, batchIndex, afterPoint: "afterMark" }, env, async ({ tx, batch, holds }) => {
    const paths: string[] = [];
    if (batch.kind === "delete") {
      const facts = (await readFactsInTx(tx, batch.items.map((i) => i.path))).map(factsOf);
      const claimActive = await claimsActiveInTx(tx, facts, cp.unitKey);
      const ctx = { holds: holds.holds, workflowEligible: cp.kind === "request", policy: pol, nowMs: env.nowMs };
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
    }
    return {
      outcome: batch.outcome,
      complete: false,
      counts: { marked: paths.length },
      evidence: paths.length > 0 ? [{ action: "PURGE_ELIGIBLE_MARKED", decision: { reason: "AUTHORIZED_BY_POLICY" }, paths, counts: { marked: paths.length, batch: batchIndex } }] : [],
      paths,
    };
  });
}
