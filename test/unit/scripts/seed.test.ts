/** `npm run seed -- <example>`: each example seeds itself; bad usage is refused before anything is touched. */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../../helpers/policy";

const seed = (args: string[], env: NodeJS.ProcessEnv) =>
  spawnSync(join(repoRoot, "node_modules", ".bin", "tsx"), [join(repoRoot, "scripts", "seed.ts"), ...args], { cwd: repoRoot, env, encoding: "utf8", timeout: 60_000 });

describe("the examples' seed script", () => {
  it("refuses an unknown example, a missing emulator and --scenario without Auth, with exit 2 and the reason", () => {
    const noEmulators: NodeJS.ProcessEnv = { ...process.env, FIRESTORE_EMULATOR_HOST: "", FIREBASE_AUTH_EMULATOR_HOST: "" };
    const unknown = seed(["shop"], noEmulators);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain("usage: npm run seed -- <atlasmart|social>");
    const offline = seed(["social"], noEmulators);
    expect(offline.status).toBe(2);
    expect(offline.stderr).toContain("the seed runs on the emulators only");
    const noAuth = seed(["atlasmart", "--scenario", "--no-auth"], { ...noEmulators, FIRESTORE_EMULATOR_HOST: "127.0.0.1:1" });
    expect(noAuth.status).toBe(2);
    expect(noAuth.stderr).toContain("--scenario needs Auth");
  }, 120_000);
});
