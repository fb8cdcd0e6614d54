import type { z } from "zod";
import { ApprovePurgeRunInput } from "../../contract/admin";
import { decideBrakeRun, purgeSettings } from "../../purge/index";
import { callable, requireRole, type Caller } from "./shared";

export { ApprovePurgeRunInput };

export interface ApproveEnv {
  nowMs: number;
  ttlMs: number;
}

/**
 * A retention-admin approves or denies a deletion set the mass-deletion brake holds back. The decision is
 * recorded with the caller's uid in the evidence chain and on the brake record; an approval lets exactly that
 * set run once, within RETENTION_BRAKE_APPROVAL_HOURS. The purge honours only a decision the chain proves.
 */
export async function approvePurgeRunHandler(
  input: z.infer<typeof ApprovePurgeRunInput>,
  caller: Caller,
  env: ApproveEnv = { nowMs: Date.now(), ttlMs: purgeSettings.approvalTtlMs() },
) {
  requireRole(caller, "retention-admin");
  const r = await decideBrakeRun({ runKey: input.runKey, decision: input.decision, note: input.note, approver: caller.uid, nowMs: env.nowMs, ttlMs: env.ttlMs });
  return { runKey: r.runKey, state: r.state, expiresAt: r.expiresAtMs === null ? null : new Date(r.expiresAtMs).toISOString(), evidenceShard: r.evidenceShard, evidenceSeq: r.evidenceSeq };
}

export const approvePurgeRun = callable("approvePurgeRun", ApprovePurgeRunInput, (input, caller) => approvePurgeRunHandler(input, caller));
