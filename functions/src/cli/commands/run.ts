import { randomUUID } from "node:crypto";
import { recordEvidence } from "../../evidence/index";
import { policy } from "../../platform/registry";
import { settings } from "../../platform/settings";
import { JOBS } from "../../jobs/catalog";
import { JOB_NAMES, resolveJobClock, type JobName, type JobSummary } from "../../kernel/job";
import { asOfOption, EXIT, type Command } from "../command";
import { keyValues, writeJson, writeOut } from "../output";
import { operatorOf } from "../operator";
import { UsageError } from "../target";

export const runCommand: Command = {
  name: "run",
  summary: `Run a scheduled job now: ${JOB_NAMES.join(", ")}`,
  usage: "retention run <job> [--as-of <iso>] [--dry-run] [--as <uid>] [--json]",
  details: `Runs the same job body as the schedule and runRetentionJob (functions/src/jobs/catalog.ts). The run
is recorded in the evidence chain first (JOB_RUN, with its asOf), as runRetentionJob does, with the operator
as the actor: on a project the Application Default Credentials' account; on the emulators --as, else
RETENTION_OPERATOR, else the OS user. Jobs: ${JOB_NAMES.join(", ")}.

Options:
  --as-of <iso>   run as though it were that time, e.g. past a grace period (emulators only; recorded in evidence)
  --dry-run       the job reports what it would do and changes nothing
  --as <uid>      the operator to record (emulators only)
  --json          machine-readable output

Exit: 0 the job ran clean, 1 it reported findings or a failure (summary ok=false or findings>0),
2 usage error, a job not available in this build (JOB_NOT_AVAILABLE), or a connection error.`,
  options: { "as-of": { type: "string" }, "dry-run": { type: "boolean" }, as: { type: "string" } },
  positionals: ["job"],
  needsFirestore: true,
  validate({ values, positionals, target }) {
    jobFrom(positionals[0]);
    asOfOption(values, target);
    if (values.as !== undefined && !target.emulator) throw new UsageError("--as is accepted only on the emulators: on a project the operator is the Application Default Credentials' account.");
  },
  async run({ values, positionals, json, target }) {
    const { name, load } = jobFrom(positionals[0]);
    const asOfMs = asOfOption(values, target);
    const wallMs = Date.now();
    // asOfOption already refused --as-of off the emulators; the job clock applies the same gate.
    const clock = resolveJobClock(asOfMs === null ? undefined : new Date(asOfMs).toISOString(), settings.onEmulator(), wallMs);
    const operator = await operatorOf(values, target);
    const dryRun = values["dry-run"] === true;
    const correlationId = randomUUID();
    const runner = await load();
    await recordEvidence(correlationId, {
      action: "JOB_RUN",
      actor: operator.actor,
      decision: { reason: "OPERATOR_REQUEST", job: name },
      policyVersion: policy().version,
      atMs: wallMs,
      correlationId,
      asOfMs: clock.asOfMs,
      detail: { job: name, dryRun, via: "cli", operatorSource: operator.source },
    });
    const summary = await runner({ nowMs: clock.nowMs, asOfMs: clock.asOfMs, dryRun, actor: operator.actor, correlationId });
    if (json) writeJson(summary);
    else writeOut(keyValues(Object.entries(summary).map(([k, v]) => [k, render(v)])));
    return summaryFailed(summary) ? EXIT.findings : EXIT.ok;
  },
};

function jobFrom(job: string | undefined): { name: JobName; load: NonNullable<(typeof JOBS)[JobName]> } {
  if (job === undefined) throw new UsageError(`run needs a job name: ${JOB_NAMES.join(", ")}.`);
  if (!(JOB_NAMES as readonly string[]).includes(job)) throw new UsageError(`unknown job ${JSON.stringify(job)}; jobs: ${JOB_NAMES.join(", ")}.`);
  const name = job as JobName;
  const load = JOBS[name];
  if (!load) throw new UsageError(`JOB_NOT_AVAILABLE: job ${name} is not available in this build.`);
  return { name, load };
}

function render(v: unknown): string | number | boolean | null {
  if (v === null || v === undefined) return null;
  if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") return v;
  return JSON.stringify(v);
}

/** A job reports trouble with `ok: false` or a positive `findings` count. */
export function summaryFailed(s: JobSummary): boolean {
  return s.ok === false || (typeof s.findings === "number" && s.findings > 0);
}
