import type { z } from "zod";
import { PlanDeletionInput } from "../../contract/admin";
import { recordEvidence } from "../../evidence/index";
import { planSubjectRef, subjectsOf, type SubjectRef } from "../../requests/index";
import { actorOf, callable, requireRole, type Caller } from "./shared";
import { inEveryCell } from "../../cells/index";
import { PRIMARY_CELL } from "../../kernel/policy";

export { PlanDeletionInput };

/** The subject an input names: the documented `subjectUid` and `tenantId`, or the general form. */
const refOf = (input: z.infer<typeof PlanDeletionInput>): SubjectRef =>
  "subjectUid" in input ? { type: "user", uid: input.subjectUid } : "tenantId" in input ? { type: "scope", id: input.tenantId } : input.subject;

/**
 * A dry run: the deterministic manifest of what erasing a user or a tenant (a scope) would delete and retain. A
 * user the registry finds in several scopes, named without one, is planned in each (`scopes`), as the request
 * group their erasure opens.
 */
export async function planDeletionHandler(input: z.infer<typeof PlanDeletionInput>, caller: Caller) {
  requireRole(caller, "compliance");
  const nowMs = Date.now();
  // The subjects are found in the primary (the registry's lookups read there); each governed database plans its part
  // of them (cells/jobs.ts): the primary's at the top, the others beside it.
  const ref = refOf(input);
  const found = await subjectsOf(ref);
  const parts = await inEveryCell(() => planSubjectRef(ref, nowMs, found));
  const { [PRIMARY_CELL]: primary, ...others } = parts;
  if (!primary) throw new Error("the primary database was not planned");
  const { subject, subjects, plan, scopes } = primary;
  await recordEvidence(plan.manifestHash, {
    action: "PLAN_PREVIEWED",
    actor: actorOf(caller),
    decision: { reason: "DRY_RUN", subjectType: subjects[0]!.type },
    policyVersion: plan.policyVersion,
    atMs: nowMs,
    manifestHash: plan.manifestHash,
    counts: { delete: plan.delete.length, retain: plan.retain.length, externalCopiesToReview: plan.externalCopiesToReview.length, ...(plan.objects.length > 0 ? { objects: plan.objects.length } : {}), ...(scopes ? { scopes: scopes.length } : {}) },
  });
  return {
    delete: plan.delete,
    archive: plan.archive,
    retain: plan.retain,
    externalCopiesToReview: plan.externalCopiesToReview,
    policyVersion: plan.policyVersion,
    manifestHash: plan.manifestHash,
    objects: plan.objects,
    subjectRef: subject,
    ...(scopes ? { scopes } : {}),
    ...(Object.keys(others).length > 0
      ? { databases: Object.fromEntries(Object.entries(others).map(([cell, p]) => [cell, { delete: p.plan.delete, retain: p.plan.retain, externalCopiesToReview: p.plan.externalCopiesToReview, manifestHash: p.plan.manifestHash, objects: p.plan.objects }])) }
      : {}),
  };
}

/**
 * Planning a tenant discovers its whole tree and holds the manifest in memory (about 0.8 KB per document, as
 * the purge's planning does), so it gets the purge's resources, not a callable's defaults (60 s, 256 MiB).
 */
export const planDeletion = callable("planDeletion", PlanDeletionInput, planDeletionHandler, { timeoutSeconds: 540, memory: "2GiB" });
