import { evidenceKey, keyRing, subjectHash, type EvidenceKey, type KeyRing } from "./rules";
import { evidenceSecrets } from "../platform/evidence-key";

/**
 * The evidence key as the ledger uses it (platform/evidence-key.ts says where it comes from). Read on every
 * call, not memoised: it is an environment variable or a small file, and a test or a rotation may change it.
 */

/**
 * No evidence key where one is needed. Appending evidence refuses (evidence is never unsigned), so the work that
 * would have recorded it does not commit. A callable answers it as `failed-precondition` with reason
 * EVIDENCE_KEY_MISSING and this message (entrypoints/callable/shared.ts), so its caller can read what to fix.
 */
export class EvidenceKeyMissingError extends Error {
  readonly reason = "EVIDENCE_KEY_MISSING";
  constructor() {
    super(
      "EVIDENCE_KEY_MISSING: no evidence key, so no evidence can be signed and the call was refused. A deployed function must bind the RETENTION_EVIDENCE_KEY secret (Secret Manager); the CLI on a project needs RETENTION_EVIDENCE_KEY set; on the emulators the key is functions/.secret.local: run `npm ci` (or `node scripts/local-evidence-key.mjs`) to create it, then restart the emulators.",
    );
    this.name = "EvidenceKeyMissingError";
  }
}

/** The key new entries and anchors are signed with. Throws when there is none: evidence is never unsigned. */
export function signingKey(): EvidenceKey {
  const secrets = evidenceSecrets();
  if (!secrets) throw new EvidenceKeyMissingError();
  return evidenceKey(secrets[0]!);
}

/** Every key a verifier may check with, or null when none is available. */
export function verifierKeys(): KeyRing | null {
  const secrets = evidenceSecrets();
  return secrets ? keyRing(secrets) : null;
}

/**
 * A keyed hash of a subject (a uid, a tenant id) under the evidence key: the same subject always gives the
 * same value under one key, and nobody without the key can compute it or reverse it. For records that must
 * recognise a subject again without keeping its raw id (the erasure ledger: "HMAC with the evidence key, never
 * the raw uid"). After a key rotation, values made with the old key no longer match: compute both while the
 * old key is still listed.
 */
export function keyedSubjectHash(subject: string): string {
  return subjectHash(signingKey().secret, subject);
}

/** The subject's keyed hash under every key the ring lists, the signing key's first: to find records made before a rotation. */
export function keyedSubjectHashes(subject: string): string[] {
  const secrets = evidenceSecrets();
  if (!secrets) throw new EvidenceKeyMissingError();
  return secrets.map((s) => subjectHash(s, subject));
}
