import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PolicyIndex } from "../../functions/src/kernel/policy";
import { RegistrySchema, type Registry } from "../../functions/src/kernel/policy-schema";

export const repoRoot = join(import.meta.dirname, "..", "..");

/** The published v1 registry, parsed the same way the build does. */
export function loadV1(): Registry {
  return RegistrySchema.parse(JSON.parse(readFileSync(join(repoRoot, "policies", "versions", "v1.json"), "utf8")));
}

export const policyV1 = (): PolicyIndex => new PolicyIndex(loadV1());
