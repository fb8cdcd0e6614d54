import { afterEach, describe, expect, it } from "vitest";
import { EvidenceKeyMissingError, keyedSubjectHash, keyedSubjectHashes, signingKey, verifierKeys } from "../../../functions/src/evidence/keys";
import { evidenceKeyId, subjectHash } from "../../../functions/src/evidence/rules";

const NEW = "n".repeat(40);
const OLD = "o".repeat(40);
const saved = process.env.RETENTION_EVIDENCE_KEY;

describe("the evidence key as the ledger uses it", () => {
  afterEach(() => {
    if (saved === undefined) delete process.env.RETENTION_EVIDENCE_KEY;
    else process.env.RETENTION_EVIDENCE_KEY = saved;
  });

  it("signs with the first key of a rotation and verifies with all of them", () => {
    process.env.RETENTION_EVIDENCE_KEY = `${NEW},${OLD}`;
    expect(signingKey()).toEqual({ id: evidenceKeyId(NEW), secret: NEW });
    expect([...verifierKeys()!.keys()]).toEqual([evidenceKeyId(NEW), evidenceKeyId(OLD)]);
  });

  it("a subject's keyed hash is the signing key's; during a rotation the old key's value is offered too, to find older records", () => {
    process.env.RETENTION_EVIDENCE_KEY = `${NEW},${OLD}`;
    expect(keyedSubjectHash("u-1001")).toBe(subjectHash(NEW, "u-1001"));
    expect(keyedSubjectHash("u-1001")).not.toContain("u-1001");
    expect(keyedSubjectHashes("u-1001")).toEqual([subjectHash(NEW, "u-1001"), subjectHash(OLD, "u-1001")]);
  });

  it("with no key there is nothing to sign or hash with: it fails loudly, and a verifier is told it has no keys", () => {
    delete process.env.RETENTION_EVIDENCE_KEY;
    expect(() => signingKey()).toThrow(EvidenceKeyMissingError);
    expect(() => keyedSubjectHash("u-1001")).toThrow(EvidenceKeyMissingError);
    expect(verifierKeys()).toBeNull();
  });
});
