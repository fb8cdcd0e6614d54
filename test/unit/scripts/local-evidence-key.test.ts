// `npm ci` gives a clone the emulators' evidence key (the root `prepare` script runs scripts/local-evidence-key.mjs),
// so a plain `firebase emulators:start` finds one: created once, kept after, never for a production install.
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../../helpers/policy";

const KEY_LINE = /^RETENTION_EVIDENCE_KEY=[0-9a-f]{64}$/m;

/** A clone with the script and an empty functions/ folder. */
function clone(): { dir: string; file: string; run: (env?: Record<string, string>) => ReturnType<typeof spawnSync> } {
  const dir = mkdtempSync(join(tmpdir(), "install-clone-"));
  mkdirSync(join(dir, "scripts"));
  mkdirSync(join(dir, "functions"));
  copyFileSync(join(repoRoot, "scripts", "local-evidence-key.mjs"), join(dir, "scripts", "local-evidence-key.mjs"));
  const env: Record<string, string | undefined> = { ...process.env };
  delete env.NODE_ENV;
  return {
    dir,
    file: join(dir, "functions", ".secret.local"),
    run: (extra = {}) => spawnSync(process.execPath, [join(dir, "scripts", "local-evidence-key.mjs")], { env: { ...env, ...extra }, encoding: "utf8" }),
  };
}

describe("the install step's emulator evidence key", () => {
  it("npm ci runs it: the root prepare script makes the key before building", () => {
    const pkg = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { scripts: Record<string, string> };
    expect(pkg.scripts.prepare).toMatch(/^node scripts\/local-evidence-key\.mjs && /);
  });

  it("creates functions/.secret.local with a random key, readable by its owner only, and keeps it on every later run", () => {
    const c = clone();
    const first = c.run();
    expect(first.status).toBe(0);
    expect(first.stderr).toContain("wrote a new evidence key to functions/.secret.local");
    const text = readFileSync(c.file, "utf8");
    expect(text).toMatch(KEY_LINE);
    expect(text).toMatch(/^RETENTION_ARCHIVE_KEK=[0-9a-f]{64}$/m);
    expect(statSync(c.file).mode & 0o077).toBe(0);
    const again = c.run();
    expect(again.status).toBe(0);
    expect(again.stderr).toBe("");
    expect(readFileSync(c.file, "utf8")).toBe(text);
    // Another clone gets another key.
    const other = clone();
    other.run();
    expect(readFileSync(other.file, "utf8").match(KEY_LINE)![0]).not.toBe(text.match(KEY_LINE)![0]);
  });

  it("keeps a developer's own key and the file's other lines; replaces only a key too short to use", () => {
    const c = clone();
    writeFileSync(c.file, `OTHER_SECRET=x\nRETENTION_EVIDENCE_KEY=${"m".repeat(40)}\n`);
    c.run();
    // A file from before the archive keys gets the archive's root key added, the rest kept as it was.
    const kept = readFileSync(c.file, "utf8");
    expect(kept).toMatch(new RegExp(`^OTHER_SECRET=x\\nRETENTION_EVIDENCE_KEY=${"m".repeat(40)}\\nRETENTION_ARCHIVE_KEK=[0-9a-f]{64}\\n$`));
    c.run();
    expect(readFileSync(c.file, "utf8")).toBe(kept);
    writeFileSync(c.file, `OTHER_SECRET=x\nRETENTION_EVIDENCE_KEY=short\n${kept.split("\n")[2]}\n`);
    c.run();
    expect(readFileSync(c.file, "utf8")).toMatch(/^OTHER_SECRET=x\nRETENTION_ARCHIVE_KEK=[0-9a-f]{64}\nRETENTION_EVIDENCE_KEY=[0-9a-f]{64}\n$/);
  });

  it("writes nothing for a production install (NODE_ENV=production)", () => {
    const c = clone();
    const r = c.run({ NODE_ENV: "production" });
    expect(r.status).toBe(0);
    expect(r.stderr).toContain("no emulator evidence key written");
    expect(existsSync(c.file)).toBe(false);
  });
});

describe("the emulators' processor keys", () => {
  it("gives every processor secret the registries name a key of its own, once, keeping the evidence key and any key already there", () => {
    const c = clone();
    mkdirSync(join(c.dir, "policies", "versions"), { recursive: true });
    mkdirSync(join(c.dir, "examples", "shop", "policies", "versions"), { recursive: true });
    const processors = (secrets: string[]) => JSON.stringify({ processors: [...secrets.map((secret, i) => ({ name: `p${i}`, secret })), { name: "desk", kind: "manual" }] });
    writeFileSync(join(c.dir, "policies", "versions", "v1.json"), processors(["RETENTION_PROCESSOR_A_KEY"]));
    writeFileSync(join(c.dir, "examples", "shop", "policies", "versions", "v2.json"), processors(["RETENTION_PROCESSOR_B_KEY", "not a secret name"]));
    writeFileSync(c.file, `RETENTION_PROCESSOR_B_KEY=${"b".repeat(40)}\n`);
    const first = c.run();
    expect(first.status).toBe(0);
    expect(first.stderr).toContain("wrote processor keys to functions/.secret.local (emulators only): RETENTION_PROCESSOR_A_KEY");
    const text = readFileSync(c.file, "utf8");
    expect(text).toMatch(/^RETENTION_PROCESSOR_A_KEY=[0-9a-f]{64}$/m);
    expect(text).toContain(`RETENTION_PROCESSOR_B_KEY=${"b".repeat(40)}\n`);
    expect(text).toMatch(KEY_LINE);
    expect(text).not.toContain("not a secret name");
    const again = c.run();
    expect(again.stderr).toBe("");
    expect(readFileSync(c.file, "utf8")).toBe(text);
  });
});
