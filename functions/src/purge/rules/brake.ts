import { hashCanonical } from "../../kernel/canonical";
import { entryHashMatches, entryMac, GENESIS_HASH, shardOf, type ChainedEvidence, type EvidenceBody, type KeyRing } from "../../evidence/rules";

/** The registry's mass-deletion brake (`registry.purge`). */
export interface BrakeLimits {
  brakeMaxDocuments: number;
  brakeMaxShareOfClass: number;
  brakeMinClassSize: number;
}

export interface BrakeViolation {
  kind: "TOTAL" | "CLASS_SHARE";
  retentionClass: string | null;
  /** Documents the run would delete (in total, or of the class). */
  count: number;
  /** The class's current document count (CLASS_SHARE only). */
  classSize: number | null;
  limit: number;
}

export interface BrakeResult {
  tripped: boolean;
  total: number;
  violations: BrakeViolation[];
}

/**
 * The mass-deletion brake. A run trips it when it would delete more than `brakeMaxDocuments` documents,
 * or more than `brakeMaxShareOfClass` of any class that has at least `brakeMinClassSize` documents (small
 * classes are exempt: deleting 3 of 4 test documents is not a mass deletion). Share is measured against
 * the class's size before the run, counting the documents the run would delete.
 */
export function evaluateBrake(
  deleteCountsByClass: Readonly<Record<string, number>>,
  classSizes: Readonly<Record<string, number>>,
  limits: BrakeLimits,
): BrakeResult {
  const violations: BrakeViolation[] = [];
  const total = Object.values(deleteCountsByClass).reduce((a, b) => a + b, 0);
  if (total > limits.brakeMaxDocuments) {
    violations.push({ kind: "TOTAL", retentionClass: null, count: total, classSize: null, limit: limits.brakeMaxDocuments });
  }
  for (const cls of Object.keys(deleteCountsByClass).sort()) {
    const count = deleteCountsByClass[cls] ?? 0;
    // A class whose size is unknown is counted as at least what the run deletes of it.
    const size = Math.max(classSizes[cls] ?? 0, count);
    if (size < limits.brakeMinClassSize || count === 0) continue;
    if (count / size > limits.brakeMaxShareOfClass) {
      violations.push({ kind: "CLASS_SHARE", retentionClass: cls, count, classSize: size, limit: limits.brakeMaxShareOfClass });
    }
  }
  return { tripped: violations.length > 0, total, violations };
}

/**
 * The key a retention-admin's approval names. It is derived from a deletion set (each unit and its manifest
 * hash), so an approval covers exactly the set that was reviewed: if the data changes, the key changes and the
 * brake asks again. A unit that trips the brake on its own waits under the key of its own deletion set
 * ({@link unitBrakeKey}), so the key stays the same while that set waits, whatever else the runs contain.
 */
export function brakeRunKey(units: readonly { unitKey: string; manifestHash: string }[]): string {
  const sorted = [...units].sort((a, b) => (a.unitKey < b.unitKey ? -1 : a.unitKey > b.unitKey ? 1 : 0));
  return hashCanonical({ brake: "v1", units: sorted.map((u) => [u.unitKey, u.manifestHash]) }).slice(0, 32);
}

/** The key one unit's deletion set waits under when it trips the brake on its own. */
export const unitBrakeKey = (unit: { unitKey: string; manifestHash: string }): string => brakeRunKey([unit]);

/** A fresh unit as the brake sees it. */
export interface BrakeCandidate {
  unitKey: string;
  manifestHash: string;
  deleteByClass: Readonly<Record<string, number>>;
  /** When its erasure is due (a request's dueAt); units without a due date (sweeps) go last. */
  dueMs: number;
}

export type BrakeVerdict =
  /** Within the run's limits: runs now. */
  | { unitKey: string; verdict: "ADMIT" }
  /** Trips the brake on its own: held back until a retention-admin approves `runKey`. */
  | { unitKey: string; verdict: "WAIT"; runKey: string; result: BrakeResult }
  /** Within the limits on its own, but the units before it used up this run's limits: runs in a later run. */
  | { unitKey: string; verdict: "DEFER"; result: BrakeResult };

function addCounts(into: Record<string, number>, add: Readonly<Record<string, number>>): Record<string, number> {
  const out = { ...into };
  for (const [cls, n] of Object.entries(add)) out[cls] = (out[cls] ?? 0) + n;
  return out;
}

/**
 * The mass-deletion brake over a run, unit by unit, so that a tripped brake holds back only what tripped it:
 * 1. a unit that would trip the brake on its own WAITs, under the key of its own deletion set, for a
 *    retention-admin's approval; nothing else is held back for it;
 * 2. the others are ADMITted in order of due date (oldest first, then unit key, so the order is deterministic),
 *    as long as everything admitted so far stays within the run's limits;
 * 3. from the first unit that would take the run over its limits, the rest are DEFERred to a later run
 *    (which admits them first, being older), so a flood of small erasures is paced, never bundled into one
 *    mass deletion, and no younger unit overtakes an older one.
 * Share limits are measured against the class sizes before the run. Verdicts come back in admission order.
 */
export function admitUnits(
  candidates: readonly BrakeCandidate[],
  classSizes: Readonly<Record<string, number>>,
  limits: BrakeLimits,
): BrakeVerdict[] {
  const ordered = [...candidates].sort((a, b) => a.dueMs - b.dueMs || (a.unitKey < b.unitKey ? -1 : a.unitKey > b.unitKey ? 1 : 0));
  const verdicts: BrakeVerdict[] = [];
  let admitted: Record<string, number> = {};
  let full = false;
  for (const c of ordered) {
    const alone = evaluateBrake(c.deleteByClass, classSizes, limits);
    if (alone.tripped) {
      verdicts.push({ unitKey: c.unitKey, verdict: "WAIT", runKey: unitBrakeKey(c), result: alone });
      continue;
    }
    const together = addCounts(admitted, c.deleteByClass);
    const run = evaluateBrake(together, classSizes, limits);
    if (full || run.tripped) {
      full = true;
      verdicts.push({ unitKey: c.unitKey, verdict: "DEFER", result: run });
      continue;
    }
    admitted = together;
    verdicts.push({ unitKey: c.unitKey, verdict: "ADMIT" });
  }
  return verdicts;
}

/** What a retention-admin decides about a waiting deletion set. */
export type BrakeDecision = "APPROVE" | "DENY";

/**
 * A decision as the brake record states it: who, what, until when, and the evidence entry that recorded it
 * when it was made (through approvePurgeRun).
 */
export interface BrakeDecisionClaim {
  runKey: string;
  decision: BrakeDecision;
  approver: string;
  /** null for a DENY (it stands until another decision). */
  expiresAtMs: number | null;
  /** The evidence chain the decision entry is in (null: a record that names none, which proves nothing). */
  evidenceShard: string | null;
  evidenceSeq: number;
  evidenceHash: string;
}

export const BRAKE_DECISION_ACTION = "PURGE_BRAKE_DECIDED";

/**
 * The evidence body that records a decision. Its detail names everything the decision binds: the run key,
 * the decision, the approver and the expiry ({@link verifyDecisionBinding} re-checks each).
 */
export function brakeDecisionEvidence(args: {
  runKey: string;
  decision: BrakeDecision;
  approver: string;
  expiresAtMs: number | null;
  noteHash: string;
  units: number;
  wouldDelete: number;
  policyVersion: string;
  atMs: number;
}): EvidenceBody {
  return {
    action: BRAKE_DECISION_ACTION,
    actor: { type: "staff", id: args.approver },
    decision: { reason: args.decision === "APPROVE" ? "RETENTION_ADMIN_APPROVED" : "RETENTION_ADMIN_DENIED" },
    policyVersion: args.policyVersion,
    atMs: args.atMs,
    counts: { units: args.units, wouldDelete: args.wouldDelete },
    detail: { runKey: args.runKey, decision: args.decision, approver: args.approver, expiresAtMs: args.expiresAtMs, noteHash: args.noteHash },
  };
}

export type BindingProblem =
  | "NO_EVIDENCE"
  | "EVIDENCE_EDITED"
  | "EVIDENCE_NOT_SIGNED"
  | "EVIDENCE_NOT_CHAINED"
  | "NOT_A_DECISION"
  | "WRONG_RUN_KEY"
  | "WRONG_DECISION"
  | "WRONG_APPROVER"
  | "WRONG_EXPIRY";

/**
 * Whether a decision on a brake record is one approvePurgeRun made, proven by the evidence ledger rather than
 * by the record (which anyone with database access could write): the entry it points at exists in that chain
 * at that seq, still hashes to its recorded hash and to the hash the record names, carries a MAC under the
 * evidence key (which the database does not hold, so nobody with database write alone can make one), links
 * to the entry before it, is a decision entry made by the approver as a staff member, and its body names the
 * same run key, decision, approver and expiry. Editing the record, pointing it at another run's decision, or
 * writing one by hand (even re-hashed) does not pass. This is the one place that binds an approval.
 */
export function verifyDecisionBinding(
  claim: BrakeDecisionClaim,
  entry: ChainedEvidence | null,
  previous: { seq: number; hash: string } | null,
  keys: KeyRing | null,
): BindingProblem | null {
  if (!entry || entry.seq !== claim.evidenceSeq || claim.evidenceShard === null || shardOf(entry) !== claim.evidenceShard) return "NO_EVIDENCE";
  const { seq, prevHash, hash } = entry;
  if (hash !== claim.evidenceHash || !entryHashMatches(entry)) return "EVIDENCE_EDITED";
  const secret = entry.keyId ? keys?.get(entry.keyId) : undefined;
  if (secret === undefined || entry.mac !== entryMac(secret, hash)) return "EVIDENCE_NOT_SIGNED";
  const expectedPrev = seq === 1 ? GENESIS_HASH : previous?.seq === seq - 1 ? previous.hash : null;
  if (expectedPrev === null || prevHash !== expectedPrev) return "EVIDENCE_NOT_CHAINED";
  const body = entry;
  if (body.action !== BRAKE_DECISION_ACTION || body.actor.type !== "staff") return "NOT_A_DECISION";
  const d = body.detail ?? {};
  if (d.runKey !== claim.runKey) return "WRONG_RUN_KEY";
  if (d.decision !== claim.decision) return "WRONG_DECISION";
  if (d.approver !== claim.approver || body.actor.id !== claim.approver) return "WRONG_APPROVER";
  if ((d.expiresAtMs ?? null) !== claim.expiresAtMs) return "WRONG_EXPIRY";
  return null;
}
