import { ApprovePurgeRunInput } from "../../contract/admin";
import { decideBrakeRun, purgeSettings } from "../../purge/index";
import { EXIT, stringOpt, type Command, type CommandContext } from "../command";
import { keyValues, writeJson, writeOut } from "../output";
import { parseInput, staffOperator } from "../staff";
import { UsageError } from "../target";

export const approveCommand: Command = {
  name: "approve",
  summary: "Approve (or --deny) a deletion set the mass-deletion brake holds back",
  usage: "retention approve <runKey> --note <text> [--deny] [--as <uid>] [--json]",
  details: `Decides on the deletion set waiting under <runKey> (retentionJobs/brake-{runKey}, the run summary's
brake.waiting, PURGE_BRAKE_TRIPPED evidence), as approvePurgeRun does: the decision is recorded in the evidence
chain with the operator as the approver; an approval lets exactly that set run once, within
RETENTION_BRAKE_APPROVAL_HOURS; --deny keeps it held back (and revokes an approval not yet used).
The operator (on the emulators --as <uid>; on a project the Application Default Credentials' account) must be
a Firebase Auth user with the retention-admin role: the purge checks the approver's role again before it uses
the approval. \`retention approve\` with no decision made yet prints nothing else.

Options:
  --note <text>   why (kept on the brake record; its hash goes into the evidence)
  --deny          deny instead of approve
  --json          machine-readable output ({runKey, state, expiresAt, evidenceShard, evidenceSeq})

Exit: 0 decided, 2 usage, a refusal (BRAKE_RUN_NOT_FOUND, BRAKE_RUN_USED, ALREADY_APPROVED,
NOT_RETENTION_ADMIN) or a connection error.`,
  options: { note: { type: "string" }, deny: { type: "boolean" }, as: { type: "string" } },
  positionals: ["runKey"],
  needsFirestore: true,
  validate(ctx) {
    inputOf(ctx);
  },
  async run(ctx) {
    const input = inputOf(ctx);
    const actor = await staffOperator(ctx.values, ctx.target, "retention-admin");
    const r = await decideBrakeRun({ ...input, approver: actor.id, nowMs: Date.now(), ttlMs: purgeSettings.approvalTtlMs() });
    const out = { runKey: r.runKey, state: r.state, expiresAt: r.expiresAtMs === null ? null : new Date(r.expiresAtMs).toISOString(), evidenceShard: r.evidenceShard, evidenceSeq: r.evidenceSeq };
    if (ctx.json) writeJson(out);
    else writeOut(keyValues([...Object.entries(out), ["decided by", actor.id]]));
    return EXIT.ok;
  },
};

function inputOf({ values, positionals }: CommandContext) {
  if (positionals[0] === undefined) throw new UsageError("approve needs the run key of a waiting deletion set.");
  if (values.note === undefined) throw new UsageError("approve needs --note <text>: why this set may (or may not) be deleted.");
  return parseInput(ApprovePurgeRunInput, { runKey: positionals[0], decision: values.deny === true ? "DENY" : "APPROVE", note: stringOpt(values, "note") });
}
