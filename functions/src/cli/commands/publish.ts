import { applyChanges, planPublish, SetupError } from "../../setup/index";
import { EXIT, stringOpt, type Command } from "../command";
import { writeErr, writeJson } from "../output";
import { UsageError } from "../target";

export const publishCommand: Command = {
  name: "publish",
  summary: "Publish a registry version of your policies folder (its hash goes into published.lock.json)",
  usage: "retention publish <version-file> [--policies <dir>] [--json]",
  details: `Publishes <policies>/versions/<version-file>: checks the whole folder with the new version in its lock (every
published version unedited, the new one a valid registry that keeps every collection governed) and appends the
version's sha256 to published.lock.json. A published version never changes afterwards: the next change is a new
version. Then \`retention setup\` bundles it for the kit's functions. In this repository, \`npm run policies:publish\`
does the same for policies/.

Options:
  --policies <dir> your policies folder (default: policies)
  --json           machine-readable output: { version, file }

Exit: 0 published; 2 usage error: no such file, already published, or a registry the checks refuse (each problem named).`,
  options: { policies: { type: "string" } },
  positionals: ["version-file"],
  needsFirestore: false,
  validate({ positionals }) {
    if (positionals.length !== 1) throw new UsageError("publish needs the version's file name in <policies>/versions/, e.g. v3.json.");
  },
  run({ values, positionals, json }) {
    return Promise.resolve().then(() => {
      const cwd = process.cwd();
      const file = positionals[0]!;
      let plan;
      try {
        plan = planPublish(cwd, stringOpt(values, "policies") ?? "policies", file);
      } catch (err) {
        if (err instanceof SetupError) throw new UsageError(err.message);
        throw err;
      }
      applyChanges(cwd, [plan.change]);
      if (json) writeJson({ version: plan.version, file });
      else writeErr(`published ${plan.version} (${file}). Next: retention setup, to bundle it for the kit's functions.`);
      return EXIT.ok;
    });
  },
};
