/**
 * What the function-kit suite (test/kit/) needs to adopt the kit the way a team does, offline: a scratch Firebase
 * project with a functions codebase and rules of its own, the README's adoption steps run in it, and the emulators
 * the two firebase-tools versions can run here together (docs/KIT.md, "Tested offline"):
 * - firebase-tools 15 for the Functions, Auth and Cloud Tasks emulators: only 15 knows function kits (14.27 rejects a
 *   kit's manifest and ignores the kit stanza), and none of the three needs Java;
 * - firebase-tools 14.27 for the Firestore emulator, which 15 refuses to start on Java 17 (it needs 21, which these
 *   machines cannot install). The 15 process and its functions reach it through FIRESTORE_EMULATOR_HOST;
 * - the Storage emulator as the repository's harness runs it (scripts/storage-emulator.mjs: firebase-tools' own server
 *   in this process, Admin SDK only, no rules runtime to download), reached through FIREBASE_STORAGE_EMULATOR_HOST.
 * Every process the suite starts is its own process group, stopped by its id.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { subsetLockfile, type Lockfile } from "../../scripts/kit-lockfile.mjs";

export const REPO = resolve(__dirname, "..", "..");
export const KIT_PROJECT = "demo-kit-social";
export const FIREBASE_15 = join(REPO, "node_modules", "firebase-tools-15", "lib", "bin", "firebase.js");
export const FIREBASE_14 = join(REPO, "node_modules", "firebase-tools", "lib", "bin", "firebase.js");

const OFFSET = Number(process.env.EMULATOR_PORT_OFFSET ?? 0);
/** The scratch project's emulator ports: beside the repository's own (scripts/emulators.mjs), moved by EMULATOR_PORT_OFFSET. */
export const PORTS = {
  hub: 4410 + OFFSET,
  functions: 5011 + OFFSET,
  auth: 9109 + OFFSET,
  tasks: 9509 + OFFSET,
  eventarc: 9330 + OFFSET,
  logging: 4560 + OFFSET,
  firestore: 8090 + OFFSET,
  firestoreWs: 9160 + OFFSET,
  firestoreHub: 4420 + OFFSET,
  firestoreLogging: 4570 + OFFSET,
  storage: 9209 + OFFSET,
};
const HOST = "127.0.0.1";

/** The environment the suite's own engine calls, the seed and the kit's processes share. */
export function emulatorEnv(): Record<string, string> {
  return {
    GCLOUD_PROJECT: KIT_PROJECT,
    FIRESTORE_EMULATOR_HOST: `${HOST}:${PORTS.firestore}`,
    FIREBASE_AUTH_EMULATOR_HOST: `${HOST}:${PORTS.auth}`,
    CLOUD_TASKS_EMULATOR_HOST: `${HOST}:${PORTS.tasks}`,
    FUNCTIONS_EMULATOR_ORIGIN: `http://${HOST}:${PORTS.functions}`,
    FIREBASE_STORAGE_EMULATOR_HOST: `${HOST}:${PORTS.storage}`,
    STORAGE_EMULATOR_HOST: `http://${HOST}:${PORTS.storage}`,
  };
}

/** A fresh folder for a scratch project (kept with KEEP_KIT_SCRATCH=1, to look at after a failure). */
export function scratchDir(): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "retention-kit-"));
  return { dir, remove: () => (process.env.KEEP_KIT_SCRATCH ? undefined : rmSync(dir, { recursive: true, force: true })) };
}

/**
 * The team's own functions codebase: one callable of its own, on the Firebase SDKs at this repository's versions,
 * with a lockfile from this repository's (scripts/kit-lockfile.mjs), installed from the npm cache.
 */
export function writeOwnFunctions(project: string): void {
  const dir = join(project, "functions");
  mkdirSync(dir, { recursive: true });
  const functionsPkg = JSON.parse(readFileSync(join(REPO, "functions", "package.json"), "utf8")) as { dependencies: Record<string, string> };
  const dependencies = { "firebase-admin": functionsPkg.dependencies["firebase-admin"]!, "firebase-functions": functionsPkg.dependencies["firebase-functions"]! };
  const root = { name: "my-app-functions", version: "1.0.0", dependencies };
  writeFileSync(join(dir, "package.json"), `${JSON.stringify({ ...root, private: true, main: "index.js", engines: { node: "22" } }, null, 2)}\n`);
  const lock = subsetLockfile(JSON.parse(readFileSync(join(REPO, "package-lock.json"), "utf8")) as Lockfile, { from: "functions", root });
  writeFileSync(join(dir, "package-lock.json"), `${JSON.stringify(lock, null, 2)}\n`);
  writeFileSync(
    join(dir, "index.js"),
    [
      'const { onCall } = require("firebase-functions/v2/https");',
      "// The team's own function, deployed beside the kit's from the same firebase.json.",
      'exports.greet = onCall((req) => ({ hello: req.auth ? req.auth.uid : "stranger" }));',
      "",
    ].join("\n"),
  );
  run("npm", ["ci", "--offline", "--no-audit", "--no-fund", "--ignore-scripts"], dir);
}

/** Runs a command to its end; fails with its output when it exits non-zero. */
export function run(cmd: string, args: readonly string[], cwd: string, env: Record<string, string> = {}): { stdout: string; stderr: string } {
  const r = spawnSync(cmd, args, { cwd, env: { ...process.env, ...env }, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} (in ${cwd}) exited ${r.status}:\n${r.stdout}\n${r.stderr}`);
  return { stdout: r.stdout, stderr: r.stderr };
}

/** The adoption block of the README: the bash code block under "## Add it to your project", one command a line. */
export function readmeSteps(): string[] {
  const readme = readFileSync(join(REPO, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## Add it to your project"));
  const block = /```bash\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error("README.md: no bash block under ## Add it to your project");
  return block[1]!
    .split("\n")
    .map((l) => l.replace(/\s+#.*$/, "").trim())
    .filter((l) => l !== "" && !l.startsWith("#"));
}

/** The npm-shrinkwrap.json sha of a tarball's integrity, as npm writes it. */
export const integrityOf = (file: string): string => `sha512-${createHash("sha512").update(readFileSync(file)).digest("base64")}`;

/**
 * The next release of the kit, for the upgrade: this build packed again under the next patch version (package.json
 * and npm-shrinkwrap.json say it), as a release built from these sources would be.
 */
export function packNextVersion(into: string): { version: string; tarball: string } {
  const staging = mkdtempSync(join(tmpdir(), "retention-kit-next-"));
  try {
    const kit = join(REPO, "packages", "kit");
    for (const f of ["package.json", "npm-shrinkwrap.json", "lib", "console", "bin", "CHANGELOG.md", "README.md"]) cpSync(join(kit, f), join(staging, f), { recursive: true });
    const pkg = JSON.parse(readFileSync(join(staging, "package.json"), "utf8")) as { version: string; scripts?: unknown };
    const [major, minor, patch] = pkg.version.split(".").map(Number) as [number, number, number];
    const version = `${major}.${minor}.${patch + 1}`;
    delete pkg.scripts;
    writeFileSync(join(staging, "package.json"), `${JSON.stringify({ ...pkg, version }, null, 2)}\n`);
    const shrinkwrap = JSON.parse(readFileSync(join(staging, "npm-shrinkwrap.json"), "utf8")) as { version: string; packages: Record<string, { version?: string }> };
    shrinkwrap.version = version;
    shrinkwrap.packages[""]!.version = version;
    writeFileSync(join(staging, "npm-shrinkwrap.json"), `${JSON.stringify(shrinkwrap, null, 2)}\n`);
    run("npm", ["pack", staging, "--ignore-scripts", "--pack-destination", into], REPO);
    return { version, tarball: join(into, `firestore-retention-${version}.tgz`) };
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/** A long-running CLI in its own process group, with its output kept for the failure message. */
export class Background {
  readonly output: string[] = [];
  private readonly child: ChildProcess;
  private exited: Promise<number | null>;

  constructor(
    readonly name: string,
    cmd: string,
    args: readonly string[],
    cwd: string,
    env: Record<string, string>,
  ) {
    this.child = spawn(cmd, args, { cwd, env: { ...process.env, ...env }, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    this.child.stdout!.on("data", (b: Buffer) => this.output.push(b.toString()));
    this.child.stderr!.on("data", (b: Buffer) => this.output.push(b.toString()));
    this.exited = new Promise((r) => this.child.on("exit", (code) => r(code)));
  }

  get log(): string {
    return this.output.join("");
  }

  /** Waits until `ready` holds, failing with the process's output if it exits or the time runs out. */
  async until(ready: () => Promise<boolean>, what: string, timeoutMs = 180_000): Promise<void> {
    const started = Date.now();
    let done = false;
    const exit = this.exited.then((code) => {
      if (!done) throw new Error(`${this.name} exited (${code}) before ${what}:\n${this.log.slice(-6000)}`);
    });
    for (;;) {
      const ok = await Promise.race([ready().catch(() => false), exit.then(() => false)]);
      if (ok) {
        done = true;
        return;
      }
      if (Date.now() - started > timeoutMs) throw new Error(`${this.name}: timed out after ${timeoutMs} ms waiting for ${what}:\n${this.log.slice(-6000)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  /** Stops the process group (SIGINT, so the CLI shuts its emulators down, then SIGKILL after a while). */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.pid === undefined) return;
    try {
      process.kill(-this.child.pid, "SIGINT");
    } catch {
      return;
    }
    const timer = setTimeout(() => {
      try {
        process.kill(-this.child.pid!, "SIGKILL");
      } catch {
        // already gone
      }
    }, 20_000);
    await this.exited;
    clearTimeout(timer);
  }
}

async function answers(url: string): Promise<boolean> {
  try {
    return (await fetch(url)).ok;
  } catch {
    return false;
  }
}

/**
 * The Firestore emulator for the scratch project, run by firebase-tools 14.27 with the jar the repository's harness
 * finds (scripts/emulators.mjs: the gcloud jar through a manifest-only wrapper, offline). Its config sits in the
 * project, so its rules path is the project's.
 */
export async function startFirestore(project: string): Promise<Background> {
  const { resolveFirestoreJar } = await import("../../scripts/emulators.mjs");
  const config = {
    firestore: { rules: "firestore.rules" },
    emulators: {
      singleProjectMode: true,
      hub: { host: HOST, port: PORTS.firestoreHub },
      logging: { host: HOST, port: PORTS.firestoreLogging },
      firestore: { host: HOST, port: PORTS.firestore, websocketPort: PORTS.firestoreWs },
      ui: { enabled: false },
    },
  };
  const file = join(project, ".firestore-emulator.json");
  writeFileSync(file, JSON.stringify(config, null, 2));
  const bg = new Background("firestore (firebase-tools 14.27)", process.execPath, [FIREBASE_14, "emulators:start", "--only", "firestore", "--project", KIT_PROJECT, "--config", file], project, {
    FIRESTORE_EMULATOR_BINARY_PATH: resolveFirestoreJar(),
  });
  await bg.until(() => answers(`http://${HOST}:${PORTS.firestore}/`), "the Firestore emulator");
  return bg;
}

/** The Storage emulator for the scratch project, in this process (scripts/storage-emulator.mjs). */
export async function startStorage(): Promise<{ stop: () => Promise<void> }> {
  const { startStorageEmulator } = await import("../../scripts/storage-emulator.mjs");
  return startStorageEmulator({ host: HOST, port: PORTS.storage, projectId: KIT_PROJECT });
}

/** The functions the Functions emulator has loaded (its /backends listing), by id. */
export async function loadedFunctions(): Promise<string[]> {
  const res = await fetch(`http://${HOST}:${PORTS.functions}/backends`);
  const body = (await res.json()) as { backends: { functionTriggers: { id?: string; name?: string; entryPoint?: string }[] }[] };
  return body.backends.flatMap((b) => b.functionTriggers.map((t) => t.id ?? t.entryPoint ?? t.name ?? ""));
}

/**
 * firebase-tools 15's Functions, Auth and Cloud Tasks emulators on the scratch project as its firebase.json says (the
 * team's codebase and the kit's instances), as `firebase emulators:start` runs them; ready once `expected` are loaded.
 */
export async function startFunctions(project: string, expected: readonly string[], extraEnv: Record<string, string> = {}): Promise<Background> {
  const bg = new Background("functions (firebase-tools 15)", process.execPath, [FIREBASE_15, "emulators:start", "--only", "functions,auth,tasks", "--project", KIT_PROJECT], project, {
    FIRESTORE_EMULATOR_HOST: `${HOST}:${PORTS.firestore}`,
    FIREBASE_STORAGE_EMULATOR_HOST: `${HOST}:${PORTS.storage}`,
    STORAGE_EMULATOR_HOST: `http://${HOST}:${PORTS.storage}`,
    FUNCTIONS_DISCOVERY_TIMEOUT: "120",
    ...extraEnv,
  });
  await bg.until(async () => {
    const loaded = await loadedFunctions();
    return expected.every((id) => loaded.some((l) => l === id || l.endsWith(`-${id}`) || l.includes(id)));
  }, `the functions ${expected.join(", ")}`);
  return bg;
}

/** The scratch project's firebase.json, as the team keeps it: its own codebase and rules, and the emulators' ports. */
export function firebaseJsonOf(): Record<string, unknown> {
  return {
    functions: [{ source: "functions", codebase: "default", ignore: ["node_modules", ".git", "*.local"] }],
    firestore: { rules: "firestore.rules", indexes: "firestore.indexes.json" },
    emulators: {
      singleProjectMode: true,
      hub: { host: HOST, port: PORTS.hub },
      functions: { host: HOST, port: PORTS.functions },
      auth: { host: HOST, port: PORTS.auth },
      tasks: { host: HOST, port: PORTS.tasks },
      eventarc: { host: HOST, port: PORTS.eventarc },
      logging: { host: HOST, port: PORTS.logging },
      ui: { enabled: false },
    },
  };
}

export { existsSync };
