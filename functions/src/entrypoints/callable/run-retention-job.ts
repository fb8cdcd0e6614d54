import { randomUUID } from "node:crypto";
import type { z } from "zod";
import { RunRetentionJobInput } from "../../contract/admin";
import { preconditionFailed } from "../../kernel/errors";
import { recordEvidence } from "../../evidence/index";
import { log } from "../../platform/logs";
import { policy } from "../../platform/registry";
import { settings } from "../../platform/settings";
import { JOBS } from "../../jobs/catalog";
import { resolveJobClock, type JobSummary } from "../../kernel/job";
import { actorOf, callable, requireRole, type Caller } from "./shared";

export { RunRetentionJobInput };

export interface RunJobEnv {
  jobs: typeof JOBS;
  onEmulator: boolean;
  wallMs: number;
}

/**
 * A retention-admin starts a scheduled job on demand. The run is recorded in evidence (with its asOf)
 * before it starts, so a time-travelled or failed run is on the record too; the job records its own effects.
 */
export async function runRetentionJobHandler(
  input: z.infer<typeof RunRetentionJobInput>,
  caller: Caller,
  env: RunJobEnv = { jobs: JOBS, onEmulator: settings.onEmulator(), wallMs: Date.now() },
): Promise<JobSummary> {
  requireRole(caller, "retention-admin");
  const clock = resolveJobClock(input.asOf, env.onEmulator, env.wallMs);
  const load = env.jobs[input.job];
  if (!load) throw preconditionFailed("JOB_NOT_AVAILABLE", `Job ${input.job} is not available in this build.`);
  const runner = await load();
  const actor = actorOf(caller);
  const correlationId = randomUUID();
  const dryRun = input.dryRun ?? false;
  await recordEvidence(correlationId, {
    action: "JOB_RUN",
    actor,
    decision: { reason: "OPERATOR_REQUEST", job: input.job },
    policyVersion: policy().version,
    atMs: env.wallMs,
    correlationId,
    asOfMs: clock.asOfMs,
    detail: { job: input.job, dryRun },
  });
  const summary = await runner({ nowMs: clock.nowMs, asOfMs: clock.asOfMs, dryRun, actor, correlationId });
  log.info("job.done", { job: input.job, dryRun, correlationId });
  return summary;
}

/**
 * The jobs keep a 480 s budget and the purge plans in memory, so an on-demand run gets what the scheduled
 * functions have (a callable's defaults, 60 s and 256 MiB, would cut a run short or stop a large plan).
 */
export const runRetentionJob = callable("runRetentionJob", RunRetentionJobInput, (input, caller) => runRetentionJobHandler(input, caller), {
  timeoutSeconds: 540,
  memory: "2GiB",
});
