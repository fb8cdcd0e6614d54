import { z } from "zod";
import { decideBrakeRun, purgeSettings } from "../../purge/index";
import { callable, inputs, requireRole, type Caller } from "./shared";

export const ApprovePurgeRunInput = z
  .object({
    /** The key the tripped brake recorded (`retentionJobs/brake-{runKey}`, PURGE_BRAKE_TRIPPED evidence). */
    runKey: z.string().regex(/^[0-9a-f]{32}$/, "a run key: 32 lowercase hex characters"),
    decision: z.enum(["APPROVE", "DENY"]),
    note: inputs.text.min(1),
  })
  .strict();

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
