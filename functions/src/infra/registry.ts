import { PolicyIndex } from "../domain/policy";
import { RegistrySchema } from "../domain/policy-schema";
import bundle from "../generated/registry.json";

let index: PolicyIndex | undefined;

/** The current published registry version, bundled at build time and validated once on first use. */
export function policy(): PolicyIndex {
  index ??= new PolicyIndex(RegistrySchema.parse(bundle.current));
  return index;
}
