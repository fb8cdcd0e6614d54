import { PolicyIndex } from "../kernel/policy";
import { RegistrySchema, type Registry } from "../kernel/policy-schema";
import bundle from "../generated/registry.json";

let index: PolicyIndex | undefined;

/** The current published registry version, bundled at build time and validated once on first use. */
export function policy(): PolicyIndex {
  index ??= new PolicyIndex(RegistrySchema.parse(bundle.current));
  return index;
}

/**
 * Test seam: enforces `registry` in this process instead of the bundled version (undefined: the bundle again),
 * so a suite can try a class the published registry does not have yet. Validated as the bundle is.
 */
export function useRegistryForTests(registry: Registry | undefined): void {
  index = registry === undefined ? undefined : new PolicyIndex(RegistrySchema.parse(registry));
}
