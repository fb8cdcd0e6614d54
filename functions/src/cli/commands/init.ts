import { resolve } from "node:path";
import { applyInit, planInit, SetupError } from "../../setup/index";
import { EXIT, stringOpt, type Command } from "../command";
import { writeErr, writeJson, writeOut } from "../output";
import { UsageError } from "../target";

export const initCommand: Command = {
  name: "init",
  summary: "Write the function kit's codebase into your Firebase project from a kit tarball (also how it is upgraded)",
  usage: "retention init <kit.tgz> [--dir <folder>] [--policies <dir>] [--json]",
  details: `Writes the folder firebase-tools installs as the kit (\`npx firebase-tools@15 functions:kits:install
--directory <folder>\`): a package.json that depends on the kit's tarball and on the Firebase SDKs it was tested with,
a package-lock.json taken from the kit's npm-shrinkwrap.json (so the install is the tested set of packages, and works
from the npm cache alone), an index.js that exports the kit, a .gitignore, the tarball itself, for the emulators an
evidence key in .secret.local (git-ignored, never deployed), and your published registry (--policies) as the first
instance's bundle, registries/<folder>.json, so that the kit loads as soon as firebase-tools installs it. Run it in
your project's folder.

Run it again with a newer tarball to upgrade: package.json and the lockfile move to the new version, the older
tarball goes, and index.js, .gitignore, .secret.local and the registries setup wrote are kept. Then \`npm --prefix
<folder> install\` and deploy. What is written and why: docs/KIT.md.

Options:
  --dir <folder>   the codebase's folder, relative to the current one (default: retention); its name is the kit's
                   name and first instance's in firebase.json (functions deploy as kit-<instance>-<name>)
  --policies <dir> your policies folder (default: policies; skipped when there is none)
  --json           machine-readable output: { dir, kit, version, previousVersion, files, keyWritten }

Exit: 0 written (or already current); 2 usage error: no tarball, not a kit tarball, a folder that holds something else.`,
  options: { dir: { type: "string" }, policies: { type: "string" } },
  positionals: ["kit.tgz"],
  needsFirestore: false,
  validate({ positionals }) {
    if (positionals.length !== 1) throw new UsageError("init needs the kit's tarball (npm pack ./packages/kit writes firestore-retention-<version>.tgz).");
  },
  run({ values, positionals, json }) {
    return Promise.resolve().then(() => {
      const cwd = process.cwd();
      const dir = stringOpt(values, "dir") ?? "retention";
      let plan;
      try {
        plan = planInit(cwd, resolve(positionals[0]!), dir, stringOpt(values, "policies") ?? "policies");
      } catch (err) {
        if (err instanceof SetupError) throw new UsageError(err.message);
        throw err;
      }
      const { keyWritten } = applyInit(cwd, plan);
      const files = plan.changes.map((c) => c.file);
      if (json) {
        writeJson({ dir, kit: plan.kit.manifest.name, version: plan.kit.manifest.version, previousVersion: plan.previousVersion, files, keyWritten });
        return EXIT.ok;
      }
      if (plan.changes.length > 0) writeOut(plan.changes.map((c) => `${c.before === null ? "wrote" : "updated"} ${c.file}`).join("\n"));
      const upgrade = plan.previousVersion !== null && plan.previousVersion !== plan.kit.manifest.version;
      writeErr(
        [
          `${dir}/: the ${plan.kit.manifest.name}@${plan.kit.manifest.version} codebase${upgrade ? ` (was ${plan.previousVersion})` : ""}${keyWritten ? ", with an emulator evidence key in .secret.local" : ""}.`,
          upgrade
            ? `Next: npm --prefix ${dir} install, then deploy (npx firebase-tools@15 deploy --only functions:<instance>).`
            : `Next: npx firebase-tools@15 functions:kits:install --directory ${dir}, then npx --prefix ${dir} retention setup.`,
        ].join("\n"),
      );
      return EXIT.ok;
    });
  },
};
