import { EVIDENCE_TX, openEvidence } from "../evidence/index";
import { FieldValue, type Transaction } from "firebase-admin/firestore";
import { assertAdminMove, assertDestroyAuthorized } from "./rules";
import { hashCanonical } from "../kernel/canonical";
import { isGraceOver, isOpenRequest } from "../requests/rules/requests";
import { isHeld } from "../kernel/held";
import { evaluateDestroy, type DestroyDecision } from "../kernel/destroy-predicate";
import { DomainError, notFound } from "../kernel/errors";
import type { Actor } from "../evidence/rules";
import type { LifecycleState } from "../kernel/lifecycle";
import { COLLECTIONS, db } from "../platform/firestore";
import { governedToFirestore, readGovernedStrict, toMs, toTimestamp } from "../platform/governed-doc";
import { activeHoldsCoveringInTx } from "../holds/index";
import { log } from "../platform/logs";
import { policy } from "../platform/registry";

export interface TransitionInput {
  path: string;
  to: LifecycleState;
  reason: string;
  correlationId?: string;
  actor: Actor;
  nowMs: number;
}

/**
 * Whether a verified archive of `path` exists. The archive workflow (purge engine) writes `archives`
 * documents naming their source by `sourcePath` and sets `verified: true` only after reading the copy back
 * and comparing hashes.
 */
async function archiveVerifiedInTx(tx: Transaction, path: string): Promise<boolean> {
  const snap = await tx.get(db().collection(COLLECTIONS.archives).where("sourcePath", "==", path).where("verified", "==", true).limit(1));
  return !snap.empty;
}

/**
 * A retention-admin's lifecycle move, in one transaction with its evidence. Reads first (the document, the
 * hold records covering it, the deletion request that soft-deleted it, the archive status for purge moves),
 * then the domain rules, then the writes. A move to PURGE_ELIGIBLE records the destroy decision on the
 * document (`purgeDecision`) and in the evidence; only AUTHORIZED_BY_POLICY lets the move happen.
 */
export async function transitionDocument(input: TransitionInput): Promise<{ path: string; from: LifecycleState; to: LifecycleState }> {
  const pol = policy();
  const cls = pol.classForPath(input.path);
  if (!cls) {
    throw new DomainError("invalid-argument", "NOT_GOVERNED_PATH", "path is not in a governed collection.");
  }
  const ref = db().doc(input.path);
  const result = await db().runTransaction(async (tx) => {
    const snap = await tx.get(ref);
    if (!snap.exists) throw notFound("DOCUMENT_NOT_FOUND", "No document at path.");
    const g = readGovernedStrict(snap.data());
    if (!g) throw new DomainError("failed-precondition", "UNKNOWN_POLICY", "The document carries no valid retention fields.");
    const holds = await activeHoldsCoveringInTx(tx, input.path);
    const requestId = typeof snap.get("deletionRequestId") === "string" ? (snap.get("deletionRequestId") as string) : null;
    const request = requestId ? await tx.get(db().collection(COLLECTIONS.deletionRequests).doc(requestId)) : null;
    const requestState = request?.exists ? String(request.get("state")) : null;
    const requestOpen = isOpenRequest(requestState);
    const graceEndsAtMs = request?.exists ? toMs(request.get("graceEndsAt")) : null;

    assertAdminMove({
      from: g.lifecycleState,
      to: input.to,
      held: isHeld({ path: input.path, ...g }, holds),
      ownedByOpenRequest: requestOpen,
    });
    let decision: DestroyDecision | null = null;
    if (input.to === "PURGE_ELIGIBLE") {
      const archiveVerified = cls.archive.required ? await archiveVerifiedInTx(tx, input.path) : false;
      decision = evaluateDestroy(
        {
          path: input.path,
          doc: g,
          activeHolds: holds,
          archiveVerified,
          // The workflow authorises a document its open request soft-deleted, once the grace is over.
          workflowEligible: requestOpen && isGraceOver({ graceEndsAtMs }, input.nowMs),
        },
        pol,
        input.nowMs,
      );
      assertDestroyAuthorized(decision);
    }
    const evidence = await openEvidence(tx, ref.path);
    const update: Record<string, unknown> = { ...governedToFirestore({ ...g, lifecycleState: input.to }) };
    if (input.to === "SOFT_DELETED") {
      update.softDeletedAt = toTimestamp(input.nowMs);
      update.preDeleteState = g.lifecycleState;
    }
    if (input.to === "ACTIVE") {
      update.softDeletedAt = FieldValue.delete();
      update.preDeleteState = FieldValue.delete();
      update.deletionRequestId = FieldValue.delete();
    }
    if (decision) {
      update.purgeDecision = {
        allowed: decision.allowed,
        reason: decision.reason,
        policyVersion: decision.policyVersion,
        retentionClass: decision.retentionClass,
        decidedAt: toTimestamp(decision.decidedAtMs),
        decidedBy: { type: input.actor.type, id: input.actor.id },
      };
    }
    tx.update(ref, update);
    evidence.append({
      action: "LIFECYCLE_TRANSITION",
      actor: input.actor,
      decision: { reason: decision ? decision.reason : "ADMIN_REQUEST", from: g.lifecycleState, to: input.to },
      policyVersion: pol.version,
      atMs: input.nowMs,
      requestId,
      correlationId: input.correlationId ?? null,
      paths: [input.path],
      // The admin's free text may name people: evidence keeps its hash.
      detail: { retentionClass: g.retentionClass, reasonHash: hashCanonical({ reason: input.reason }) },
    });
    return { path: input.path, from: g.lifecycleState, to: input.to };
  }, EVIDENCE_TX);
  log.info("lifecycle.transition", { from: result.from, to: result.to, correlationId: input.correlationId ?? null });
  return result;
}
