import type { Transaction } from "firebase-admin/firestore";
import { fenceLease, leaseValue } from "../../platform/lease";
import type { StepEnv } from "./env";
import { checkpointFrom, checkpointRef, leaseRefOf, type UnitCheckpoint } from "../store";

/**
 * The fence every purge transaction starts with: the lease is still ours (else LeaseLostError), and the
 * checkpoint still says this round is RUNNING at this step (else null: another attempt already did the
 * step, so this one does nothing). Reads only; `writeCheckpoint` does the matching write.
 */
export async function fenceStep(tx: Transaction, cp: UnitCheckpoint, env: StepEnv, step: number | "any"): Promise<UnitCheckpoint | null> {
  const leaseRef = leaseRefOf(cp);
  const cpRef = checkpointRef(cp.unitKey);
  const leaseSnap = await fenceLease(tx, leaseRef, env.holder);
  const cpSnap = leaseRef.path === cpRef.path ? leaseSnap : await tx.get(cpRef);
  const now = checkpointFrom(cpSnap.data());
  if (!now || now.round !== cp.round || now.phase !== "RUNNING") return null;
  if (step !== "any" && now.nextStep !== step) return null;
  return now;
}

/**
 * Updates the checkpoint and renews the lease in the caller's transaction. For a sweep the lease lives on
 * the checkpoint itself, so both go in one write.
 */
export function writeCheckpoint(tx: Transaction, cp: UnitCheckpoint, env: StepEnv, update: Record<string, unknown>, leaseUpdate: Record<string, unknown> = {}): void {
  const leaseRef = leaseRefOf(cp);
  const cpRef = checkpointRef(cp.unitKey);
  const lease = { lease: leaseValue(env.holder) };
  if (leaseRef.path === cpRef.path) {
    tx.update(cpRef, { ...update, ...lease, ...leaseUpdate });
  } else {
    tx.update(cpRef, update);
    tx.update(leaseRef, { ...lease, ...leaseUpdate });
  }
}
