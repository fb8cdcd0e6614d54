import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
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

  it("gives a fresh clone an emulator evidence key in functions/.secret.local, and keeps one that is there", () => {
    const clone = mkdtempSync(join(tmpdir(), "fresh-clone-"));
    mkdirSync(join(clone, "scripts"));
    mkdirSync(join(clone, "functions"));
    for (const f of ["emulators.mjs", "local-evidence-key.mjs"]) copyFileSync(join(repoRoot, "scripts", f), join(clone, "scripts", f));
    mkdirSync(join(clone, "examples", "atlasmart"), { recursive: true });
    copyFileSync(join(repoRoot, "examples", "atlasmart", "example.json"), join(clone, "examples", "atlasmart", "example.json"));
    const emptyHome = mkdtempSync(join(tmpdir(), "no-emulator-home-"));
    const env: Record<string, string | undefined> = { ...process.env, HOME: emptyHome, GCLOUD_FIRESTORE_JAR: join(emptyHome, "missing.jar") };
    delete env.FIRESTORE_EMULATOR_BINARY_PATH;
    const run = () => spawnSync(process.execPath, [join(clone, "scripts", "emulators.mjs"), "exec", "--only", "firestore", "--", "true"], { env, encoding: "utf8" });
    run();
    const file = join(clone, "functions", ".secret.local");
    const first = readFileSync(file, "utf8");
    expect(first).toMatch(/^RETENTION_EVIDENCE_KEY=[0-9a-f]{64}$/m);
    expect(statSync(file).mode & 0o077).toBe(0);
    run();
    expect(readFileSync(file, "utf8")).toBe(first);
    writeFileSync(file, "OTHER_SECRET=x\n");
    run();
    expect(readFileSync(file, "utf8")).toMatch(/^OTHER_SECRET=x\nRETENTION_EVIDENCE_KEY=[0-9a-f]{64}\nRETENTION_ARCHIVE_KEK=[0-9a-f]{64}\n$/);
  });

  it("runs the Storage emulator itself, rules off, and gives the command its host in both variables", () => {
    // An offset of its own, so this does not meet a harness another suite (or developer) has running.
    const offset = Number(process.env.EMULATOR_PORT_OFFSET ?? 0) + 17;
    const port = 9199 + offset;
    const probe = `fetch(process.env.STORAGE_EMULATOR_HOST + "/storage/v1/b/demo-bucket/o").then(async (r) => console.log(JSON.stringify({ status: r.status, body: await r.json(), fb: process.env.FIREBASE_STORAGE_EMULATOR_HOST, gcs: process.env.STORAGE_EMULATOR_HOST })))`;
    const r = spawnSync(process.execPath, [join(repoRoot, "scripts", "emulators.mjs"), "exec", "--only", "storage", "--", `node -e '${probe}'`], {
      env: { ...process.env, EMULATOR_PORT_OFFSET: String(offset) },
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout.trim().split("\n").pop()!)).toEqual({
      status: 200,
      body: { kind: "storage#objects" },
      fb: `127.0.0.1:${port}`,
      gcs: `http://127.0.0.1:${port}`,
    });
    expect(r.stderr).toContain(`Storage emulator (Admin SDK only, no rules) on 127.0.0.1:${port}`);
  });

  it("refuses an offset that puts the Storage emulator on port 10080, which Node's fetch will not reach, before running anything", () => {
    const r = spawnSync(process.execPath, [join(repoRoot, "scripts", "emulators.mjs"), "exec", "--only", "storage", "--", "echo", "SHOULD-NOT-RUN"], {
      env: { ...process.env, EMULATOR_PORT_OFFSET: String(10080 - 9199) },
      encoding: "utf8",
    });
    expect(r.status).toBe(2);
    expect(r.stdout).not.toContain("SHOULD-NOT-RUN");
    expect(r.stderr).toContain("port 10080");
  });

  it("refuses the offset 2000 too: it puts the Firestore emulator (8080) on port 10080, which the tests reach by fetch", () => {
    const r = spawnSync(process.execPath, [join(repoRoot, "scripts", "emulators.mjs"), "exec", "--only", "firestore", "--", "echo", "SHOULD-NOT-RUN"], {
      env: { ...process.env, EMULATOR_PORT_OFFSET: "2000" },
      encoding: "utf8",
    });
    expect(r.status).toBe(2);
    expect(r.stdout).not.toContain("SHOULD-NOT-RUN");
    expect(r.stderr).toContain("firestore emulator on port 10080");
  });

  it("never commits or deploys the local key", () => {
    expect(readFileSync(join(repoRoot, ".gitignore"), "utf8")).toMatch(/^functions\/\.secret\.local$/m);
    const config = JSON.parse(readFileSync(join(repoRoot, "firebase.json"), "utf8")) as { functions: { ignore: string[] }[] };
    expect(config.functions[0]!.ignore).toContain(".secret.local");
    expect(readFileSync(join(repoRoot, "functions", ".env.local"), "utf8")).not.toContain("RETENTION_EVIDENCE_KEY");
  });
});
