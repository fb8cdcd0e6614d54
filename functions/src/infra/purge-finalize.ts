import { getAuth } from "firebase-admin/auth";
import { FieldValue } from "firebase-admin/firestore";
import { emptyTally, verifyDeletePath, verifyMaskedPath, verifyRetainedPath, type ObservedDoc, type RecordedOutcome, type VerifyTally } from "../domain/purge-verify";
import { openEvidence } from "./evidence-store";
import { adminApp, db } from "./firestore";
import { toTimestamp } from "./governed-doc";
import { TX_OPTIONS } from "./holds";
import { log } from "./logs";
import { fenceStep, writeCheckpoint } from "./purge-fence";
import { fire, purgeEvidence, type StepEnv } from "./purge-env";
import { compareNames, documentsInRange, existingAmong } from "./purge-probe";
import { batchFrom, batchRef, readAll, requestRef, retainedRef, type BatchDoc, type RetainedRecord, type UnitCheckpoint } from "./purge-store";

/** Findings named in evidence: enough to act on, bounded so one entry stays small. */
const MAX_FINDING_PATHS = 100;

async function retainedRecords(cp: UnitCheckpoint): Promise<RetainedRecord[]> {
  const out: RetainedRecord[] = [];
  for (let i = 0; i < cp.retainedChunks; i++) {
    const snap = await retainedRef(cp.unitKey, cp.round, i).get();
    if (!snap.exists) throw new Error(`purge record ${snap.ref.path} is missing: the checkpoint names retained items that were never written`);
    out.push(...((snap.get("items") as RetainedRecord[] | undefined) ?? []));
  }
  return out;
}

async function* batches(cp: UnitCheckpoint): AsyncGenerator<BatchDoc> {
  for (let i = 0; i < cp.batchCount; i++) yield batchFrom(await batchRef(cp.unitKey, cp.round, i).get());
}

function outcomeOf(b: BatchDoc): Map<string, RecordedOutcome> {
  const m = new Map<string, RecordedOutcome>();
  for (const p of b.outcome.deleted) m.set(p, "deleted");
  for (const p of b.outcome.gone) m.set(p, "gone");
  for (const h of b.outcome.held) m.set(h.path, "held");
  for (const p of b.outcome.claimed) m.set(p, "claimed");
  for (const p of b.outcome.deferred) m.set(p, "deferred");
  for (const x of b.outcome.blocked) m.set(x.path, "blocked");
  return m;
}

/**
 * Re-checks the manifest against the data as it is now, one batch at a time: every delete path gone or
 * documented (stopped by a hold, kept above a retained descendant), every retained record present, every
 * masked record masked.
 */
export async function verifyUnit(cp: UnitCheckpoint): Promise<VerifyTally> {
  const tally = emptyTally();
  const retained = await retainedRecords(cp);
  const retainedPaths = new Set(retained.map((r) => r.path));
  let first: string | null = null;
  let last: string | null = null;
  for await (const b of batches(cp)) {
    for (const h of b.outcome.held) retainedPaths.add(h.path);
    if (b.kind !== "delete") continue;
    for (const { path } of b.items) {
      if (first === null || compareNames(path, first) < 0) first = path;
      if (last === null || compareNames(path, last) > 0) last = path;
    }
  }
  // Existence is all a delete path is checked for. One scan of the range the whole manifest spans reads
  // only what survived; when that range holds many other documents (a sweep over a live collection) each
  // batch scans its own range, or reads its paths by name.
  const survivors = first !== null && last !== null ? await documentsInRange(first, last, Math.max(1_000, cp.pathCount)) : null;
  for await (const b of batches(cp)) {
    const outcomes = outcomeOf(b);
    if (b.kind === "delete") {
      const existing = survivors ?? (await existingAmong(b.items.map((i) => i.path)));
      for (const item of b.items) {
        const observed: ObservedDoc = { exists: existing.has(item.path), presentFields: [], masked: false };
        verifyDeletePath(item.path, observed, outcomes.get(item.path), retainedPaths, cp.kind === "request", tally);
      }
      continue;
    }
    const snaps = await readAll(b.items.map((i) => i.path));
    b.items.forEach((item, k) => {
      const s = snaps[k]!;
      const observed: ObservedDoc = {
        exists: s.exists,
        presentFields: (item.fields ?? []).filter((f) => s.get(f) !== undefined),
        masked: s.exists && s.get("maskedAt") !== undefined,
      };
      verifyMaskedPath(item.path, observed, outcomes.get(item.path) === "held", tally);
    });
  }
  const plainRetained = retained.filter((r) => r.action === "retain");
  const snaps = await readAll(plainRetained.map((r) => r.path));
  plainRetained.forEach((r, k) => verifyRetainedPath(r.path, { exists: snaps[k]!.exists, presentFields: [], masked: false }, tally));
  return tally;
}

/**
 * The subject's Auth account goes with the purge (it stayed during the grace period so the user could
 * cancel). The request records the deletion first, so the Auth-delete backstop, which sees this request
 * PROCESSING, recognises the event as already handled.
 */
async function deleteAuthAccount(cp: UnitCheckpoint, step: number, env: StepEnv): Promise<void> {
  if (cp.kind !== "request" || !cp.requestId || cp.subject?.type !== "user") return;
  const uid = cp.subject.uid;
  const requestId = cp.requestId;
  const proceed = await db().runTransaction(async (tx) => {
    const now = await fenceStep(tx, cp, env, step);
    if (!now) return false;
    const req = await tx.get(requestRef(requestId));
    if (req.get("authDeletion") !== undefined) return true;
    const evidence = await openEvidence(tx);
    tx.update(requestRef(requestId), {
      authDeletion: { by: env.actor.id, markedAt: toTimestamp(env.nowMs) },
      timeline: FieldValue.arrayUnion({ at: toTimestamp(env.nowMs), event: "AUTH_ACCOUNT_DELETE" }),
    });
    evidence.append(purgeEvidence(env, cp, { action: "AUTH_ACCOUNT_DELETE", decision: { reason: "AUTHORIZED_BY_POLICY" }, counts: { accounts: 1 } }));
    return true;
  }, TX_OPTIONS);
  if (!proceed) return;
  try {
    await getAuth(adminApp()).deleteUser(uid);
  } catch (err) {
    // Already gone (an earlier attempt, or the user was removed by other means): the effect holds.
    if ((err as { code?: string }).code !== "auth/user-not-found") throw err;
  }
  log.info("purge.auth.deleted", { requestId });
}

/**
 * Finalize step: verify the manifest; only a clean verification lets the request become PURGED (with
 * PURGE_VERIFIED evidence). Otherwise the unit is BLOCKED with PURGE_VERIFY_FAILED and the findings, and
 * the next run plans it afresh. Returns the phase reached, or null when another attempt got there first.
 */
export async function finalizeStep(cp: UnitCheckpoint, step: number, env: StepEnv): Promise<"DONE" | "BLOCKED" | null> {
  await fire(env, { point: "beforeFinalize", unitKey: cp.unitKey, round: cp.round, step, batch: null, paths: [] });
  const tally = await verifyUnit(cp);
  const ok = tally.findings.length === 0;
  if (ok) await deleteAuthAccount(cp, step, env);
  const counts = { gone: tally.gone, retained: tally.retained, masked: tally.masked, findings: tally.findings.length };
  const phase = await db().runTransaction(async (tx) => {
    const now = await fenceStep(tx, cp, env, step);
    if (!now) return null;
    const evidence = await openEvidence(tx);
    const at = toTimestamp(env.nowMs);
    if (ok) {
      // For a request the lease lives on the request: its release and the state change are one write.
      const request = cp.requestId
        ? {
            state: "PURGED",
            purgedAt: at,
            manifestHash: cp.manifestHash,
            purgeCounts: counts,
            blockedReason: FieldValue.delete(),
            timeline: FieldValue.arrayUnion({ at, event: "PURGED", detail: `${tally.gone} gone, ${tally.retained} retained, ${tally.masked} masked` }),
          }
        : {};
      writeCheckpoint(tx, cp, env, { phase: "DONE", nextStep: step + 1, finishedAt: at, verify: counts }, { lease: FieldValue.delete(), ...request });
      evidence.append(purgeEvidence(env, cp, { action: "PURGE_VERIFIED", decision: { reason: "MANIFEST_VERIFIED" }, counts }));
      return "DONE" as const;
    }
    const reason = "PURGE_VERIFY_FAILED";
    const request = cp.requestId
      ? { state: "BLOCKED", blockedReason: reason, timeline: FieldValue.arrayUnion({ at, event: "PURGE_BLOCKED", detail: reason }) }
      : {};
    writeCheckpoint(tx, cp, env, { phase: "BLOCKED", blockedReason: reason, finishedAt: at, verify: counts }, { lease: FieldValue.delete(), ...request });
    const problems: Record<string, number> = {};
    for (const f of tally.findings) problems[f.problem] = (problems[f.problem] ?? 0) + 1;
    evidence.append(
      purgeEvidence(env, cp, {
        action: "PURGE_VERIFY_FAILED",
        decision: { reason },
        paths: tally.findings.slice(0, MAX_FINDING_PATHS).map((f) => f.path),
        counts: { ...counts, ...problems },
      }),
    );
    return "BLOCKED" as const;
  }, TX_OPTIONS);
  if (phase === "DONE") log.info("purge.request.done", { unitKey: cp.unitKey, requestId: cp.requestId, ...counts });
  if (phase === "BLOCKED") log.error("purge.verify.failed", { unitKey: cp.unitKey, requestId: cp.requestId, ...counts });
  return phase;
}
