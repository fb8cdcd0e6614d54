import type { Subject } from "../../plan/rules";
import { planSubjectRef, subjectsOf, type SubjectPlan, type SubjectRef } from "../../requests/index";
import { asOfOption, EXIT, stringOpt, type Command, type OptionValues } from "../command";
import { keyValues, table, writeJson, writeOut } from "../output";
import { SCOPE_OPTIONS, scopeOpt, scopeWord } from "../scope";
import { UsageError } from "../target";
import { inEveryCell } from "../../cells/index";
import { registryPolicy } from "../../platform/registry";

export const planCommand: Command = {
  name: "plan",
  summary: "Dry-run deletion plan for a user (--subject) or a whole scope, such as a tenant (--scope)",
  usage: "retention plan (--subject <uid> [--scope <id>] | --scope <id>) [--json] [--as-of <iso>]",
  details: `Walks the data map for the subject and prints the manifest planDeletion returns: the paths to delete,
the paths retained or masked with their reasons, the external copies to review, the policy version and the
manifestHash (SHA-256 of the canonical manifest; identical across runs on unchanged data). Read-only.
Under a registry with several governed databases it plans each database's part (--database narrows to one);
--json then prints {databases: {<name>: plan}}.

A user the registry's lookups find in several scopes (workspaces, organisations), named without --scope, is
planned in each, as the request group their erasure opens: one manifest per scope (the first, the lead, also
erases the data that names the uid alone), the union printed, and a hash over the scopes' hashes.

Options:
  --subject <uid>   the user to plan for; with --scope, in that scope, else in every scope the registry's
                    lookups find (none in an app without scopes)
  --scope <id>      the scope (the registry's scope kind: a tenant, a workspace); alone: plan its closure
  --tenant <id>     the same as --scope (its alias)
  --as-of <iso>     plan as though it were that time (emulators only)
  --json            machine-readable output

Exit: 0 planned, 2 usage (an app without a scope kind given --scope: NO_SCOPE_KIND) or connection error.`,
  options: { subject: { type: "string" }, ...SCOPE_OPTIONS, "as-of": { type: "string" } },
  positionals: [],
  needsFirestore: true,
  validate({ values, target }) {
    refFrom(values);
    asOfOption(values, target);
  },
  async run({ values, json, target }) {
    const ref = refFrom(values);
    const asOfMs = asOfOption(values, target);
    // The subjects are found in the primary; each governed database plans its part of them (--database narrows to
    // one); under one database, its plan as it always was.
    const found = await subjectsOf(ref);
    const parts = await inEveryCell(() => planSubjectRef(ref, asOfMs ?? Date.now(), found), target.cell);
    const names = Object.keys(parts);
    if (names.length === 1 && registryPolicy().cells().length === 1) return print(parts[names[0]!]!, json);
    if (json) writeJson({ databases: Object.fromEntries(names.map((n) => [n, jsonOf(parts[n]!)])) });
    else for (const n of names) print(parts[n]!, false, n);
    return EXIT.ok;
  },
};

/** A plan as --json prints it: one subject's manifest as planSubject gives it; several (a user in several scopes): each scope's part. */
const jsonOf = ({ subject, subjects, plan, scopes }: SubjectPlan) =>
  subjects.length === 1 ? { subject: subjects[0], subjectRef: subject, ...plan } : { subjects, subjectRef: subject, ...plan, scopes };

/** One database's plan, as the command prints it (a heading names the database when there are several). */
function print(part: SubjectPlan, json: boolean, database?: string): number {
  if (json) {
    writeJson(jsonOf(part));
    return EXIT.ok;
  }
  const { subjects, plan, scopes } = part;
  const word = scopeWord();
  const parts: string[] = database !== undefined ? [`== database ${database}`] : [];
  if (plan.delete.length > 0) parts.push(table(["DELETE"], plan.delete.map((p) => [p])), "");
  if (plan.retain.length > 0) {
    parts.push(
      table(
        ["RETAIN", "ACTION", "REASON CODE", "UNTIL", "REASON"],
        plan.retain.map((r) => [r.path, r.fields ? `${r.action} ${r.fields.join(",")}` : r.action, r.reasonCode, r.until ?? "-", r.reason]),
      ),
      "",
    );
  }
  if (plan.externalCopiesToReview.length > 0) parts.push(table(["EXTERNAL COPY TO REVIEW"], plan.externalCopiesToReview.map((p) => [p])), "");
  if (scopes) parts.push(table([word.toUpperCase(), "LEAD", "DELETE", "RETAIN", "MANIFEST HASH"], scopes.map((s) => [s.scope, s.lead ? "yes" : "-", String(s.delete), String(s.retain), s.manifestHash])), "");
  parts.push(
    keyValues([
      ["subject", subjectText(subjects, word)],
      ["delete", plan.delete.length],
      ["retain", plan.retain.length],
      ["external copies", plan.externalCopiesToReview.length],
      ["policy version", plan.policyVersion],
      ["manifestHash", plan.manifestHash],
    ]),
  );
  writeOut(parts.join("\n"));
  return EXIT.ok;
}

function subjectText(subjects: readonly Subject[], word: string): string {
  const first = subjects[0]!;
  if (first.type !== "user") return `${word} ${first.tenantId}`;
  if (subjects.length > 1) return `user ${first.uid} in ${subjects.length} ${word}s (${subjects.map((s) => s.tenantId).join(", ")})`;
  return `user ${first.uid}${first.tenantId ? ` in ${word} ${first.tenantId}` : ""}`;
}

/** The subject the options name, in the general form. */
function refFrom(values: OptionValues): SubjectRef {
  const uid = stringOpt(values, "subject");
  const scope = scopeOpt(values);
  if (uid !== undefined) return { type: "user", uid: userFrom(uid), ...(scope !== undefined ? { scope } : {}) };
  if (scope === undefined) throw new UsageError(`plan needs --subject <uid> or --scope <id> (a ${scopeWord()}).`);
  return { type: "scope", id: scope };
}

const ID = /^[A-Za-z0-9_.-]{1,128}$/;

/** A uid given alone: checked here, its scopes found by the registry's lookups at run time. */
export function userFrom(uid: string): string {
  if (!ID.test(uid)) throw new UsageError(`--subject ${JSON.stringify(uid)} is not a valid uid.`);
  return uid;
}

/** A user in a named scope, or a scope alone, as the stored subject form. */
export function subjectFrom(uid: string | undefined, tenantId: string | undefined): Subject {
  if (tenantId === undefined) throw new UsageError("plan needs --subject <uid> or --scope <id>.");
  if (!ID.test(tenantId)) throw new UsageError(`--scope ${JSON.stringify(tenantId)} is not a valid id.`);
  if (uid === undefined) return { type: "tenant", tenantId };
  if (!ID.test(uid)) throw new UsageError(`--subject ${JSON.stringify(uid)} is not a valid uid.`);
  return { type: "user", uid, tenantId };
}
