import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { evidenceSecrets, readLocalSecret } from "../../../functions/src/platform/evidence-key";

const key = (c: string) => c.repeat(40);

describe("the evidence key's sources", () => {
  it("reads RETENTION_EVIDENCE_KEY, the first of a comma-separated list signing", () => {
    expect(evidenceSecrets({ RETENTION_EVIDENCE_KEY: key("a") })).toEqual([key("a")]);
    expect(evidenceSecrets({ RETENTION_EVIDENCE_KEY: ` ${key("b")}, ${key("a")} ` })).toEqual([key("b"), key("a")]);
  });

  it("refuses a short key loudly, and has none when nothing is set off the emulators", () => {
    expect(() => evidenceSecrets({ RETENTION_EVIDENCE_KEY: "short" })).toThrow(/at least 32 characters/);
    expect(evidenceSecrets({})).toBeNull();
  });

  it("inside a function the local secret file is never a fallback: a function that forgot to bind the secret gets no key", () => {
    expect(evidenceSecrets({ FIRESTORE_EMULATOR_HOST: "127.0.0.1:8080", FUNCTION_TARGET: "nightlyPurge" })).toBeNull();
    expect(evidenceSecrets({ FIRESTORE_EMULATOR_HOST: "127.0.0.1:8080", K_SERVICE: "nightlypurge" })).toBeNull();
  });

  it("reads a secret's line from the first local secret file that has it (the evidence key and the archive's root key alike)", () => {
    const dir = mkdtempSync(join(tmpdir(), "secret-local-"));
    const a = join(dir, "a.secret.local");
    const b = join(dir, "b.secret.local");
    writeFileSync(a, `# local only\nRETENTION_EVIDENCE_KEY=${key("e")}\n`);
    writeFileSync(b, `RETENTION_ARCHIVE_KEK = "${key("k")}"\nRETENTION_EVIDENCE_KEY=${key("x")}\n`);
    expect(readLocalSecret("RETENTION_EVIDENCE_KEY", [join(dir, "missing"), a, b])).toBe(key("e"));
    expect(readLocalSecret("RETENTION_ARCHIVE_KEK", [a, b])).toBe(key("k"));
    expect(readLocalSecret("NOT_THERE", [a, b])).toBeUndefined();
  });
});
