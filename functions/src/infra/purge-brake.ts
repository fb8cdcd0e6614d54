import { getAuth } from "firebase-admin/auth";
import { segments } from "../domain/paths";
import { brakeRunKey, evaluateBrake, type BrakeResult } from "../domain/purge-brake";
import { recordEvidence } from "./evidence-store";
import { adminApp, COLLECTIONS, db } from "./firestore";
import { toTimestamp } from "./governed-doc";
import { log } from "./logs";
import { type StepEnv } from "./purge-env";
import type { UnitPlan } from "./purge-plan";
import { policy } from "./registry";

/**
 * The size of each class: Firestore count() aggregations over the collections the registry assigns to
 * it (a top-level collection directly, a nested one as a collection group).
 */
export async function classSizes(classes: readonly string[]): Promise<Record<string, number>> {
  const pol = policy();
  const out: Record<string, number> = {};
  for (const cls of classes) {
    let n = 0;
    for (const rule of pol.registry.collections.filter((r) => r.retentionClass === cls)) {
      const s = segments(rule.pattern);
      const query = s.length === 2 ? db().collection(s[0]!) : db().collectionGroup(s[s.length - 2]!);
      n += (await query.count().get()).data().count;
    }
    out[cls] = n;
  }
  return out;
}

/** `retentionJobs/brake-approval-{runKey}`: a retention-admin's approval of one deletion set. */
export const approvalRef = (runKey: string) => db().collection(COLLECTIONS.retentionJobs).doc(`brake-approval-${runKey}`);

/**
 * An approval counts only when the uid it names holds the retention-admin role (custom claims, read from
 * Auth now): writing the document is not enough to approve.
 */
async function readApproval(runKey: string): Promise<{ ok: true; approvedBy: string } | { ok: false; why: "NONE" | "APPROVER_UNKNOWN" | "APPROVER_NOT_RETENTION_ADMIN" }> {
  const snap = await approvalRef(runKey).get();
  const approvedBy = snap.get("approvedBy") as unknown;
  if (!snap.exists || typeof approvedBy !== "string" || approvedBy === "") return { ok: false, why: "NONE" };
  try {
    const user = await getAuth(adminApp()).getUser(approvedBy);
    const roles = (user.customClaims?.roles as unknown[] | undefined) ?? [];
    return roles.includes("retention-admin") ? { ok: true, approvedBy } : { ok: false, why: "APPROVER_NOT_RETENTION_ADMIN" };
  } catch (err) {
    if ((err as { code?: string }).code === "auth/user-not-found") return { ok: false, why: "APPROVER_UNKNOWN" };
    throw err;
  }
}

export type BrakeCheck = { status: "OK" | "APPROVED" | "TRIPPED"; runKey: string; result: BrakeResult };

/**
 * The mass-deletion brake over a run's fresh units (before anything is archived, marked or deleted). A
 * trip is recorded (PURGE_BRAKE_TRIPPED, with the run key an approval must name) and logged at ERROR; an
 * approved run is recorded as PURGE_BRAKE_APPROVED with the approver.
 */
export async function checkBrake(plans: readonly UnitPlan[], env: StepEnv): Promise<BrakeCheck> {
  const pol = policy();
  const counts: Record<string, number> = {};
  for (const p of plans) for (const [cls, n] of Object.entries(p.deleteByClass)) counts[cls] = (counts[cls] ?? 0) + n;
  const sizes = await classSizes(Object.keys(counts).filter((c) => (counts[c] ?? 0) > 0));
  const result = evaluateBrake(counts, sizes, pol.registry.purge);
  const runKey = brakeRunKey(plans.map((p) => ({ unitKey: p.unitKey, manifestHash: p.manifestHash })));
  if (!result.tripped) return { status: "OK", runKey, result };
  const approval = await readApproval(runKey);
  const base = {
    actor: env.actor,
    policyVersion: pol.version,
    atMs: env.nowMs,
    asOfMs: env.asOfMs,
    correlationId: env.correlationId,
    counts: { wouldDelete: result.total, units: plans.length },
  };
  const violations = result.violations.map((v) => ({ ...v }));
  if (approval.ok) {
    await recordEvidence({ ...base, action: "PURGE_BRAKE_APPROVED", decision: { reason: "RETENTION_ADMIN_APPROVED", violations }, detail: { runKey, approvedBy: approval.approvedBy } });
    await approvalRef(runKey).update({ usedAt: toTimestamp(env.nowMs), usedBy: env.holder.owner });
    log.warn("purge.brake.approved", { runKey, total: result.total });
    return { status: "APPROVED", runKey, result };
  }
  await recordEvidence({ ...base, action: "PURGE_BRAKE_TRIPPED", decision: { reason: "MASS_DELETION_BRAKE", violations }, detail: { runKey, approval: approval.why } });
  log.error("purge.brake.tripped", {
    runKey,
    total: result.total,
    violations: result.violations.map((v) => (v.retentionClass ? `${v.kind}:${v.retentionClass}` : v.kind)),
  });
  return { status: "TRIPPED", runKey, result };
}
