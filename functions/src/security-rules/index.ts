import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { basename } from "node:path";
import type { Registry } from "../kernel/policy-schema";
import { generateRetentionRules, spliceRetentionRules } from "./rules";

export { RULES_BEGIN, RULES_END, RulesGenerationError, RulesMarkerError, clientProtectedFields, generateRetentionRules, scopeFunctionNames, spliceRetentionRules } from "./rules";

/** A rules file that is not there: nothing to rewrite. */
export class RulesFileMissingError extends Error {
  constructor(readonly file: string) {
    super(`${file} does not exist: name the app's rules file with --rules <file> (default: firestore.rules in the current directory).`);
    this.name = "RulesFileMissingError";
  }
}

export interface RulesFilePlan {
  file: string;
  registryVersion: string;
  before: string;
  after: string;
  changed: boolean;
}

/** What `file` holds, and what it would hold with its retention part written from `registry` (`name`: the file in messages). Reads only. */
export function planRulesFile(file: string, registry: Registry, name: string = basename(file)): RulesFilePlan {
  if (!existsSync(file)) throw new RulesFileMissingError(file);
  const before = readFileSync(file, "utf8");
  const after = spliceRetentionRules(before, generateRetentionRules(registry), name);
  return { file, registryVersion: registry.version, before, after, changed: after !== before };
}

/** Writes a plan's new text, when it changes anything. */
export function applyRulesFile(plan: RulesFilePlan): void {
  if (plan.changed) writeFileSync(plan.file, plan.after);
}
