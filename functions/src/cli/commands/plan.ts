import type { Subject } from "../../plan/rules";
import { planSubject } from "../../plan/index";
import { resolveUserSubject } from "../../requests/index";
import { asOfOption, EXIT, stringOpt, type Command } from "../command";
import { keyValues, table, writeJson, writeOut } from "../output";
import { UsageError } from "../target";
import { inEveryCell } from "../../cells/index";
import { registryPolicy } from "../../platform/registry";

export const planCommand: Command = {
  name: "plan",
  summary: "Dry-run deletion plan for a user (--subject) or a whole tenant (--tenant)",
  usage: "retention plan (--subject <uid> [--tenant <id>] | --tenant <id>) [--json] [--as-of <iso>]",
  details: `Walks the data map for the subject and prints the manifest planDeletion returns: the paths to delete,
the paths retained or masked with their reasons, the external copies to review, the policy version and the
manifestHash (SHA-256 of the canonical manifest; identical across runs on unchanged data). Read-only.
Under a registry with several governed databases it plans each database's part (--database narrows to one);
--json then prints {databases: {<name>: plan}}.

Options:
  --subject <uid>   the user to plan for; with --tenant, in that tenant (the registry's scope), else in the
                    scope the registry's lookups find (none in an app without scopes)
  --tenant <id>     the tenant (alone: plan the closure of the whole tenant)
  --as-of <iso>     plan as though it were that time (emulators only)
  --json            machine-readable output

Exit: 0 planned, 2 usage or connection error.`,
  options: { subject: { type: "string" }, tenant: { type: "string" }, "as-of": { type: "string" } },
  positionals: [],
  needsFirestore: true,
  validate({ values, target }) {
    const uid = stringOpt(values, "subject");
    if (uid !== undefined && stringOpt(values, "tenant") === undefined) userFrom(uid);
    else subjectFrom(uid, stringOpt(values, "tenant"));
    asOfOption(values, target);
  },
  async run({ values, json, target }) {
    const uid = stringOpt(values, "subject");
    const tenantId = stringOpt(values, "tenant");
    const subject = uid !== undefined && tenantId === undefined ? await resolveUserSubject(userFrom(uid)) : subjectFrom(uid, tenantId);
    const asOfMs = asOfOption(values, target);
    // Each governed database's part (--database narrows to one); under one database, its plan as it always was.
    const plans = await inEveryCell(() => planSubject(subject, asOfMs ?? Date.now()), target.cell);
    const names = Object.keys(plans);
    if (names.length === 1 && registryPolicy().cells().length === 1) return print(plans[names[0]!]!, subject, json);
    if (json) writeJson({ databases: plans });
    else for (const n of names) print(plans[n]!, subject, false, n);
    return EXIT.ok;
  },
};

/** One database's plan, as the command prints it (a heading names the database when there are several). */
function print(plan: Awaited<ReturnType<typeof planSubject>>, subject: Subject, json: boolean, database?: string): number {
  if (json) {
    writeJson(plan);
    return EXIT.ok;
  }
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
  parts.push(
    keyValues([
      ["subject", subject.type === "user" ? `user ${subject.uid}${subject.tenantId ? ` in ${subject.tenantId}` : ""}` : `tenant ${subject.tenantId}`],
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

const ID = /^[A-Za-z0-9_.-]{1,128}$/;

/** A uid given alone: checked here, its scope found by the registry's lookups at run time. */
export function userFrom(uid: string): string {
  if (!ID.test(uid)) throw new UsageError(`--subject ${JSON.stringify(uid)} is not a valid uid.`);
  return uid;
}

export function subjectFrom(uid: string | undefined, tenantId: string | undefined): Subject {
  if (tenantId === undefined) throw new UsageError("plan needs --subject <uid> or --tenant <id>.");
  if (!ID.test(tenantId)) throw new UsageError(`--tenant ${JSON.stringify(tenantId)} is not a valid id.`);
  if (uid === undefined) return { type: "tenant", tenantId };
  if (!ID.test(uid)) throw new UsageError(`--subject ${JSON.stringify(uid)} is not a valid uid.`);
  return { type: "user", uid, tenantId };
}
