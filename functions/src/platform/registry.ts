import { PolicyIndex } from "../kernel/policy";
import { RegistrySchema } from "../kernel/policy-schema";
import bundle from "../generated/registry.json";

let index: PolicyIndex | undefined;

/** The current published registry version, bundled at build time and validated once on first use. */
export function policy(): PolicyIndex {
  index ??= new PolicyIndex(RegistrySchema.parse(bundle.current));
  return index;
}
