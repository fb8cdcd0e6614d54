import { createHmac } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

/**
 * The evidence key (RETENTION_EVIDENCE_KEY; on the emulators outside a function also functions/.secret.local),
 * several comma-separated during a rotation, the signing key first. Read on every call: a rotation or a test
 * may change it.
 */
function evidenceSecrets(): string[] {
  const name = "RETENTION_EVIDENCE_KEY";
  let raw = process.env[name];
  if (!raw && process.env.FIRESTORE_EMULATOR_HOST && !process.env.K_SERVICE && !process.env.FUNCTION_TARGET) {
    const file = join(__dirname, "..", "..", ".secret.local");
    if (existsSync(file)) raw = /^\s*RETENTION_EVIDENCE_KEY\s*=\s*"?([^"\n]*)"?\s*$/m.exec(readFileSync(file, "utf8"))?.[1];
  }
  const secrets = (raw ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (secrets.length === 0) throw new Error(`No evidence key: set ${name} (on the emulators, functions/.secret.local).`);
  return secrets;
}

const subjectHash = (secret: string, subject: string): string => createHmac("sha256", secret).update(`retention-subject/v1\n${subject}`, "utf8").digest("hex");

/** A keyed hash (HMAC-SHA256 under the evidence key) of a subject id: stable under one key, not reversible without it. */
export function keyedSubjectHash(subject: string): string {
  return subjectHash(evidenceSecrets()[0]!, subject);
}

/** The subject's keyed hash under every key of the ring, the signing key's first: to find records made before a rotation. */
export function keyedSubjectHashes(subject: string): string[] {
  return evidenceSecrets().map((s) => subjectHash(s, subject));
}
