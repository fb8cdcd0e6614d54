import { PolicyIndex } from "../../functions/src/kernel/policy";
import { RegistrySchema } from "../../functions/src/kernel/policy-schema";
import bundle from "../../functions/src/generated/registry.json";

/** The registry version the functions were built with (the same build bundles it into both). */
export const policy = new PolicyIndex(RegistrySchema.parse(bundle.current));
