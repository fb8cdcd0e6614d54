import { z } from "zod";
import { RegistrySchema } from "../kernel/policy-schema";

/** The registry version the functions enforce, for the console: it reads the app's words and paths from it at run time. */
export const GetRetentionRegistryInput = z.object({}).strict();

export const GetRetentionRegistryOutput = z.object({
  /** The enforced version, as every governed document's policyVersion names it. */
  version: z.string(),
  registry: RegistrySchema,
});
