import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../../helpers/policy";

describe("emulator harness", () => {
  it("with no emulator jar reachable, fails at once (exit 2) and says what to install, without running the command", () => {
    const emptyHome = mkdtempSync(join(tmpdir(), "no-emulator-home-"));
    const env: Record<string, string | undefined> = { ...process.env, HOME: emptyHome, GCLOUD_FIRESTORE_JAR: join(emptyHome, "missing.jar") };
    delete env.FIRESTORE_EMULATOR_BINARY_PATH;
    const started = Date.now();
    const r = spawnSync(process.execPath, [join(repoRoot, "scripts", "emulators.mjs"), "exec", "--only", "firestore", "--", "echo", "SHOULD-NOT-RUN"], {
      env,
      encoding: "utf8",
    });
    expect(r.status).toBe(2);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(r.stdout).not.toContain("SHOULD-NOT-RUN");
    expect(r.stderr).toContain("No Cloud Firestore emulator jar was found");
    expect(r.stderr).toContain("gcloud components install cloud-firestore-emulator");
  });
});
