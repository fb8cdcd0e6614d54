import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { SECRETS } from "../config/params";

/**
 * The evidence key's secret values, read lazily (nothing at import). The first signs; all of them verify (a
 * rotation lists the new key first and keeps the old ones until nothing signed with them needs checking).
 *
 * - In a deployed function: the environment variable Cloud Functions sets from Secret Manager for a function
 *   that names the secret (`config/params.ts#FUNCTION_SECRETS`).
 * - Anywhere, when set: `RETENTION_EVIDENCE_KEY` (an operator's CLI on a project gets it from Secret Manager:
 *   `RETENTION_EVIDENCE_KEY=$(gcloud secrets versions access latest --secret=RETENTION_EVIDENCE_KEY)`).
 * - On the emulators, outside a function: `functions/.secret.local`, the file the Functions emulator reads, so
 *   the CLI and in-process tests sign and verify with the key the emulated functions use. Inside an emulated
 *   function the file is never read here: a function that forgot to bind the secret fails as it would deployed.
 *
 * Returns null when there is no key; appending evidence then fails (`evidence/keys.ts`), verifying reports the
 * MACs unchecked.
 */
export function evidenceSecrets(env: Readonly<Record<string, string | undefined>> = process.env): string[] | null {
  return secretValues(SECRETS.evidenceKey.env, env);
}

/**
 * A secret's values, found as the evidence key's are (above): the environment variable of its name, else, on the
 * emulators outside a function, its line in `functions/.secret.local`. Comma-separated keys during a rotation, each
 * at least 32 characters; null when there is none. The processors' keys are read the same way.
 */
export function secretValues(name: string, env: Readonly<Record<string, string | undefined>> = process.env): string[] | null {
  const raw = env[name] || (onEmulatorOutsideFunction(env) ? readLocalSecret(name) : undefined);
  if (!raw) return null;
  const secrets = raw
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  for (const s of secrets) {
    if (s.length < 32) throw new Error(`${name} must be at least 32 characters (e.g. \`openssl rand -hex 32\`); one of its keys has ${s.length}.`);
  }
  return secrets.length > 0 ? secrets : null;
}

function onEmulatorOutsideFunction(env: Readonly<Record<string, string | undefined>>): boolean {
  return Boolean(env.FIRESTORE_EMULATOR_HOST) && !env.K_SERVICE && !env.FUNCTION_TARGET;
}

/** `functions/.secret.local`: from functions/src/platform (sources) and functions/lib/platform (the build) alike. */
export const LOCAL_SECRET_FILE = join(__dirname, "..", "..", ".secret.local");

/**
 * A secret's line in the first of `files` that has it (`NAME=value`, quotes stripped), the emulators' secret files:
 * `functions/.secret.local` unless told otherwise. Only for local secrets; the callers decide when to look.
 */
export function readLocalSecret(name: string, files: readonly string[] = [LOCAL_SECRET_FILE]): string | undefined {
  for (const file of files) {
    if (!existsSync(file)) continue;
    for (const line of readFileSync(file, "utf8").split("\n")) {
      const m = /^\s*([A-Z0-9_]+)\s*=\s*(.*?)\s*$/.exec(line);
      if (m?.[1] === name) return m[2]!.replace(/^"(.*)"$/, "$1");
    }
  }
  return undefined;
}
