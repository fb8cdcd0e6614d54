import { relative, resolve } from "node:path";
import { createTwoFilesPatch, FILE_HEADERS_ONLY } from "diff";
import { publishedRegistryIn, registryPolicy } from "../../platform/registry";
import { applyRulesFile, planRulesFile, RulesFileMissingError, RulesGenerationError, RulesMarkerError, type RulesFilePlan } from "../../security-rules/index";
import { EXIT, stringOpt, type Command, type OptionValues } from "../command";
import { writeErr, writeJson, writeOut } from "../output";
import { UsageError } from "../target";

/** A unified diff of the rules file from what it holds to what it would hold; empty when nothing changes. */
export function rulesDiff(plan: RulesFilePlan, name: string): string {
  if (!plan.changed) return "";
  return createTwoFilesPatch(`a/${name.replace(/^\/+/, "")}`, `b/${name.replace(/^\/+/, "")}`, plan.before, plan.after, undefined, undefined, { context: 3, headerOptions: FILE_HEADERS_ONLY });
}

export const rulesCommand: Command = {
  name: "rules",
  summary: "Write the retention part of firestore.rules from the policy registry (or --check that it is current)",
  usage: "retention rules [--rules <file>] [--policies <dir>] [--check] [--json]",
  details: `Rewrites the part of the rules file between the lines \`// <retention:begin>\` and \`// <retention:end>\` with
what the current registry says: the functions the app's own match blocks call (signedIn, hasRole, isAppUser,
isVisible, hasLiveExpiry, protectedFields, writesNoRetentionField, and for a registry with a scope kind its claim,
its open check and its membership check, e.g. tenantClaim, tenantOpen, inTenant) and the control-plane collections
no client reaches. Nothing outside the markers is touched, and running it twice changes nothing. Prints a unified
diff of what changed. Reads no database. What is generated and why: docs/SECURITY-RULES.md.

The markers go inside \`match /databases/{database}/documents { ... }\`, before the app's own match blocks; a file
without them is refused (exit 2), never guessed at.

Options:
  --rules <file>   the rules file (default: firestore.rules in the current directory)
  --policies <dir> write from the registry an app's policies folder publishes (its published.lock.json's last
                   version) instead of the enforced one (RETENTION_REGISTRY_FILE, else the built-in), e.g. --policies examples/social/policies
  --check          write nothing; exit 1 when the file differs from what would be written (the diff says how)
  --json           machine-readable output: { file, registryVersion, changed, written, diff }

Exit: 0 written, or already current; 1 (--check) the file differs; 2 usage error: a missing file, missing or
misplaced markers, a registry the rules cannot be written from.`,
  options: { rules: { type: "string" }, policies: { type: "string" }, check: { type: "boolean" } },
  positionals: [],
  needsFirestore: false,
  run({ values, json }) {
    return Promise.resolve().then(() => writeRules(values, json));
  },
};

/** The command's work, synchronous: a file read, perhaps a write. */
function writeRules(values: OptionValues, json: boolean): number {
  const file = resolve(stringOpt(values, "rules") ?? "firestore.rules");
  const rel = relative(process.cwd(), file);
  const name = rel && !rel.startsWith("..") ? rel : file;
  const check = values.check === true;
  let plan: RulesFilePlan;
  try {
    const policies = stringOpt(values, "policies");
    plan = planRulesFile(file, policies ? publishedRegistryIn(resolve(policies)) : registryPolicy().registry, name);
  } catch (err) {
    if (err instanceof RulesFileMissingError || err instanceof RulesMarkerError || err instanceof RulesGenerationError) throw new UsageError(err.message);
    throw err;
  }
  const diff = rulesDiff(plan, name);
  const written = plan.changed && !check;
  if (written) applyRulesFile(plan);
  if (json) writeJson({ file: name, registryVersion: plan.registryVersion, changed: plan.changed, written, diff });
  else if (!plan.changed) writeOut(`${name}: the retention part is what registry ${plan.registryVersion} says; nothing to write.`);
  else {
    writeOut(diff);
    if (check) writeErr(`${name}: the retention part differs from registry ${plan.registryVersion}. Run \`npx retention rules\` to write it.`);
    else writeErr(`${name}: wrote the retention part from registry ${plan.registryVersion}.`);
  }
  return check && plan.changed ? EXIT.findings : EXIT.ok;
}
