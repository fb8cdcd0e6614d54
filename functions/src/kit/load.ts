import { requiresRole } from "firebase-functions/v2";
import { kitInstance, MAX_FUNCTION_ID_LENGTH } from "../platform/function-ids";
import { enforceCodebaseRegistry, policy } from "../platform/registry";
import { idsTooLong, kitFunctionNames } from "./functions";
import { KIT_ROLES } from "./roles";

/**
 * What the kit's entry does before it defines a function (kit/index.ts imports this module first):
 * - the registry is the bundle the adopting project built into its own codebase (RETENTION_REGISTRY_FILE, relative
 *   to the codebase directory, which is the working directory of firebase-tools' discovery, of the emulated functions
 *   and of a deployed function), never one from inside the package, and the functions do not load without it;
 * - every function id fits Cloud Functions' limit once prefixed with the instance (else the functions do not load,
 *   with the ids that do not fit, rather than fail part-way through a deploy);
 * - the roles the functions need are declared, for the service account firebase-tools provisions for the kit.
 */
enforceCodebaseRegistry(process.cwd());
const instance = kitInstance();
if (instance !== null) {
  const long = idsTooLong(instance, kitFunctionNames(policy()));
  if (long.length > 0) {
    throw new Error(
      `Kit instance ${JSON.stringify(instance)}: ${long.map((l) => `${l.id} (${l.length})`).join(", ")} would exceed Cloud Functions' ${MAX_FUNCTION_ID_LENGTH} characters. Install the kit under a shorter instance id.`,
    );
  }
}
for (const { role } of KIT_ROLES) requiresRole(role);
