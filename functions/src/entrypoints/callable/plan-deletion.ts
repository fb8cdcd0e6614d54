import type { z } from "zod";
import { PlanDeletionInput } from "../../contract/admin";
import { recordEvidence } from "../../evidence/index";
import { planSubject } from "../../plan/index";
import { resolveTenantSubject, resolveUserSubject } from "../../requests/index";
import { actorOf, callable, requireRole, type Caller } from "./shared";
import { inEveryCell } from "../../cells/index";
import { PRIMARY_CELL } from "../../kernel/policy";

export { PlanDeletionInput };

/** A dry run: the deterministic manifest of what erasing a user or a tenant would delete and retain. */
export async function planDeletionHandler(input: z.infer<typeof PlanDeletionInput>, caller: Caller) {
  requireRole(caller, "compliance");
  const subject = "subjectUid" in input ? await resolveUserSubject(input.subjectUid) : await resolveTenantSubject(input.tenantId);
  const nowMs = Date.now();
  // Each governed database's part, planned there (cells/jobs.ts): the primary's at the top, the others beside it.
  const plans = await inEveryCell(() => planSubject(subject, nowMs));
  const { [PRIMARY_CELL]: plan, ...others } = plans;
  if (!plan) throw new Error("the primary database was not planned");
  await recordEvidence(plan.manifestHash, {
    action: "PLAN_PREVIEWED",
    actor: actorOf(caller),
    decision: { reason: "DRY_RUN", subjectType: subject.type },
    policyVersion: plan.policyVersion,
    atMs: nowMs,
    manifestHash: plan.manifestHash,
    counts: { delete: plan.delete.length, retain: plan.retain.length, externalCopiesToReview: plan.externalCopiesToReview.length, ...(plan.objects.length > 0 ? { objects: plan.objects.length } : {}) },
  });
  return {
    delete: plan.delete,
    archive: plan.archive,
    retain: plan.retain,
    externalCopiesToReview: plan.externalCopiesToReview,
    policyVersion: plan.policyVersion,
    manifestHash: plan.manifestHash,
    objects: plan.objects,
    ...(Object.keys(others).length > 0
      ? { databases: Object.fromEntries(Object.entries(others).map(([cell, p]) => [cell, { delete: p.delete, retain: p.retain, externalCopiesToReview: p.externalCopiesToReview, manifestHash: p.manifestHash, objects: p.objects }])) }
      : {}),
  };
}

/**
 * Planning a tenant discovers its whole tree and holds the manifest in memory (about 0.8 KB per document, as
 * the purge's planning does), so it gets the purge's resources, not a callable's defaults (60 s, 256 MiB).
 */
export const planDeletion = callable("planDeletion", PlanDeletionInput, planDeletionHandler, { timeoutSeconds: 540, memory: "2GiB" });
