import { createTwoFilesPatch, FILE_HEADERS_ONLY } from "diff";
import { applyChanges, planSetup, SetupError, shown, type FileChange } from "../../setup/index";
import { EXIT, stringOpt, type Command } from "../command";
import { writeErr, writeJson, writeOut } from "../output";
import { UsageError } from "../target";

/** A unified diff per changed file (a new file diffs against nothing). */
export function changesText(cwd: string, changes: readonly FileChange[]): string {
  return changes
    .map((c) => {
      const name = shown(cwd, c.file);
      return createTwoFilesPatch(c.before === null ? "/dev/null" : `a/${name}`, `b/${name}`, c.before ?? "", c.after, undefined, undefined, { context: 3, headerOptions: FILE_HEADERS_ONLY });
    })
    .join("\n");
}

export const setupCommand: Command = {
  name: "setup",
  summary: "Write what the function kit cannot ship into your project: the registry bundle, rules, indexes and TTL policies, the console's site",
  usage: "retention setup [--instance <id>] [--policies <dir>] [--console <site>] [--location <loc>] [--project <id>] [--check] [--json]",
  details: `Run in your Firebase project's folder, after \`functions:kits:install\`. For one instance of the kit it writes:
- your published registry (--policies, default policies/) as a bundle into the kit's codebase
  (registries/<instance>.json, where the instance's functions read it): the registry comes from your repository,
  never from inside the package;
- the instance's emulator settings (.env.local beside it: App Check not enforced on the emulators);
- the retention part of the rules file and the indexes file firebase.json names for the instance's governed database,
  between \`// <retention:begin>\` and \`// <retention:end>\` (the rules file needs the markers; the index file gets them
  at the end of its two arrays): the rules the registry implies, the indexes the control plane and the data map need,
  and the TTL policies of the registry's TTL collections (Firestore creates those from the index file on deploy);
- firebase.json: the kit's codebase ignores the emulators' local files; with --console, the Hosting entry that serves
  the compliance console on that site, its calls routed to this instance's functions.
Nothing outside the markers is changed, and running it twice changes nothing. Every change is shown as a diff. Then
it prints the commands a kit cannot run for you, once per instance: the evidence key in Secret Manager, the erasure
ledger's database, the bucket and log sink the evidence anchors go to. What and why: docs/KIT.md.

It refuses, writing nothing, when two instances of the kit would govern the same database (or one's ledger is
another's governed database), when the rules file has no markers, or when an override of yours in the index file
lacks what the registry needs (it says what to add).

Options:
  --instance <id>  the kit instance (default: the only one)
  --policies <dir> your policies folder (default: policies)
  --console <site> serve the console on this Hosting site (create it first: firebase hosting:sites:create <site>)
  --location <loc> the governed database's location, for the printed commands
  --project <id>   the project whose .env.<project> the instance uses (default: .firebaserc's default)
  --check          write nothing; exit 1 when something would change
  --json           machine-readable output: { project, instance, registryVersion, database, changes: [{file, diff}], written, commands }

Exit: 0 written (or already current); 1 (--check) something would change; 2 usage error: no firebase.json, no kit
installed, an unknown instance, instances that would share a database, files that cannot be written safely.`,
  options: { instance: { type: "string" }, policies: { type: "string" }, console: { type: "string" }, location: { type: "string" }, check: { type: "boolean" } },
  positionals: [],
  needsFirestore: false,
  run({ values, json }) {
    return Promise.resolve().then(() => {
      const cwd = process.cwd();
      let plan;
      try {
        plan = planSetup({
          cwd,
          policies: stringOpt(values, "policies") ?? "policies",
          ...(stringOpt(values, "project") ? { project: stringOpt(values, "project") } : {}),
          ...(stringOpt(values, "instance") ? { instance: stringOpt(values, "instance") } : {}),
          ...(stringOpt(values, "console") ? { consoleSite: stringOpt(values, "console") } : {}),
          ...(stringOpt(values, "location") ? { location: stringOpt(values, "location") } : {}),
        });
      } catch (err) {
        if (err instanceof SetupError) throw new UsageError(err.message);
        throw err;
      }
      const check = values.check === true;
      const written = !check && plan.changes.length > 0;
      if (written) applyChanges(cwd, plan.changes);
      if (json) {
        writeJson({
          project: plan.project,
          instance: plan.instance,
          registryVersion: plan.registryVersion,
          database: plan.governedDatabase,
          changes: plan.changes.map((c) => ({ file: shown(cwd, c.file), diff: changesText(cwd, [c]) })),
          written,
          commands: plan.commands,
        });
      } else {
        if (plan.changes.length > 0) writeOut(changesText(cwd, plan.changes));
        const what = `instance ${plan.instance} (registry ${plan.registryVersion}, database ${plan.governedDatabase}, project ${plan.project})`;
        if (plan.changes.length === 0) writeErr(`${what}: everything setup writes is current.`);
        else if (check) writeErr(`${what}: ${plan.changes.length} file(s) differ from what setup writes. Run \`retention setup\` to write them.`);
        else writeErr(`${what}: wrote ${plan.changes.map((c) => shown(cwd, c.file)).join(", ")}.`);
        writeErr(`\nRun once for this instance (a kit cannot do these for you):\n${plan.commands}\n\nThen deploy: npx firebase-tools@15 deploy --only functions:${plan.instance},firestore${values.console ? `,hosting:${String(values.console)}` : ""} --project ${plan.project}`);
      }
      return check && plan.changes.length > 0 ? EXIT.findings : EXIT.ok;
    });
  },
};
