import { ExplainDeletionInput } from "../../contract/evidence";
import { explainAcrossCells } from "../../cells/index";
import { explainQueryOf, type ExplainQuery } from "../../evidence/index";
import { processorViews } from "../../processors/index";
import { EXIT, positiveIntOpt, stringOpt, type Command, type CommandContext } from "../command";
import { keyValues, table, writeJson, writeOut } from "../output";
import { SCOPE_OPTIONS, scopeOpt, scopeWord } from "../scope";
import { parseInput } from "../staff";
import { UsageError } from "../target";

export const explainCommand: Command = {
  name: "explain",
  summary: "Why was this deleted, and who allowed it: the evidence for a path (or --request, --subject, --scope)",
  usage: "retention explain (<path> | --request <id> | --subject <uid> [--scope <id>] | --scope <id>) [--verify-chain] [--limit <n>] [--cursor <c>] [--json]",
  details: `Prints the evidence entries that name a document path or a Cloud Storage object (gs://bucket/name: the
PURGE_OBJECTS entry names its generation and outcome), or a deletion request, or every request of a
subject), in chain order, as explainDeletion returns them: what was done, by whom (user, staff or the
system), under which reason and policy version; then the entries that say who allowed it (the subject's
request, the run an operator started, a brake approval and its approver's decision). Each entry's hash and
its links to its neighbours are checked; --verify-chain walks the whole chain as verify-evidence does.
About a path, the other paths an entry names (a purge batch names other subjects' documents) are not shown.
Under a registry with several governed databases it looks in every one (a DATABASE column names where each
entry is), one database after another as the cursor pages; --database narrows it to one.

Options:
  --request <id>   explain a deletion request instead of a path
  --subject <uid>  explain every deletion request of a user (with --scope: those in that scope)
  --scope <id>     alone: explain the closures of a scope (the registry's scope kind: a tenant, a
                   workspace); --tenant is its alias
  --verify-chain   verify the whole evidence chain too
  --limit <n>      entries per page (default 25, at most 100); the printed cursor pages on
  --json           machine-readable output (explainDeletion's answer)

Exit: 0 the evidence shown verifies, 1 it does not, 2 usage or connection error.`,
  options: { request: { type: "string" }, subject: { type: "string" }, ...SCOPE_OPTIONS, "verify-chain": { type: "boolean" }, limit: { type: "string" }, cursor: { type: "string" } },
  positionals: ["path"],
  needsFirestore: true,
  validate(ctx) {
    inputOf(ctx);
  },
  async run(ctx) {
    const { query, pageSize, cursor, verify } = inputOf(ctx);
    // Every governed database's evidence, database by database; --database narrows to one.
    const r = await explainAcrossCells(query, { pageSize, cursor, verify, ...(ctx.target.cell !== null ? { database: ctx.target.cell } : {}) });
    const several = r.entries.some((e) => e.database !== undefined);
    // About a request: where each processor it notified stands now (overdue is a fact of today, not of the ledger).
    const processors = query.kind === "request" && !ctx.json ? await processorViews([query.value], Date.now()) : [];
    if (ctx.json) writeJson(r);
    else {
      const who = (e: (typeof r.entries)[number]) => (e.actor.type === "system" ? `system ${e.actor.id}` : `${e.actor.type} ${e.actor.id}`);
      writeOut(
        [
          r.entries.length === 0
            ? `No evidence names ${questionText(query)}.`
            : table(
                ["ENTRY", ...(several ? ["DATABASE"] : []), "AT", "ACTION", "BY", "REASON", "POLICY", "REQUEST", "ROLE", "VERIFIED"],
                r.entries.map((e) => [e.id, ...(several ? [e.database ?? "-"] : []), e.at, e.action, who(e), e.reason, e.policyVersion, e.requestId ?? "-", e.role, e.verified ? "yes" : "NO"]),
              ),
          ...(processors.length > 0
            ? ["", table(["PROCESSOR", "STATE", "DEADLINE", "ACKNOWLEDGED", "RECEIPT"], processors.map((p) => [p.processor, p.status.toUpperCase(), p.deadline, p.acknowledgedAt ?? "-", p.receiptId ?? "-"]))]
            : []),
          "",
          ...r.verification.problems.map((p) => `problem: ${p.id ?? `${p.chain} #${p.seq}`} ${p.problem}: ${p.detail}`),
          keyValues([
            ["question", questionText(query)],
            ["verification", `${r.verification.ok ? "OK" : "FAILED"} (${r.verification.mode}, ${r.verification.checked} checked)`],
            ["more", r.nextCursor ? `--cursor ${r.nextCursor}` : null],
          ]),
        ].join("\n"),
      );
    }
    return r.verification.ok ? EXIT.ok : EXIT.findings;
  },
};

/** The question in the registry's words: "subject u-1 in workspace w-2", "workspace w-2". */
function questionText(q: ExplainQuery): string {
  if (q.kind === "scope") return `${scopeWord()} ${q.value}`;
  return `${q.kind} ${q.value}${q.scope !== undefined ? ` in ${scopeWord()} ${q.scope}` : ""}`;
}

function inputOf({ values, positionals }: CommandContext): { query: ExplainQuery; pageSize: number; cursor?: string; verify: "entries" | "chain" } {
  const path = positionals[0];
  const request = stringOpt(values, "request");
  const subject = stringOpt(values, "subject");
  const scope = scopeOpt(values);
  const given = [path, request, subject ?? scope].filter((v) => v !== undefined).length;
  if (given !== 1) throw new UsageError(`explain needs exactly one of: a document path (or gs://bucket/name), --request <id>, --subject <uid> (with or without --scope), --scope <id> (a ${scopeWord()}).`);
  const pageSize = positiveIntOpt(values, "limit", 25);
  const cursor = stringOpt(values, "cursor");
  const verify = values["verify-chain"] === true ? ("chain" as const) : ("entries" as const);
  const base = { pageSize, cursor, verify };
  const named =
    path !== undefined
      ? { path }
      : request !== undefined
        ? { requestId: request }
        : subject !== undefined
          ? scope !== undefined
            ? { subject: { type: "user", uid: subject, scope } }
            : { subjectUid: subject }
          : { subject: { type: "scope", id: scope } };
  const parsed = parseInput(ExplainDeletionInput, { ...named, ...base });
  return { query: explainQueryOf(parsed), pageSize, cursor, verify };
}
