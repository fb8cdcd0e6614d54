#!/usr/bin/env node
// The one emulator harness: finds a Firestore emulator jar (order from ENVIRONMENT.md), wraps the
// gcloud jar when needed, and runs `firebase emulators:exec|start` on fixed 127.0.0.1 ports.
//
//   node scripts/emulators.mjs exec [--example <name>] [--only firestore,auth,storage] [--record-queries <label>] -- <command...>
//   node scripts/emulators.mjs start [--example <name>]  (also Pub/Sub, for the schedules, Hosting, serving console/dist, and Storage)
//
// --example <name> runs an example app of examples/<name>/ (its example.json): its demo project id (the functions
// then enforce the registry that project's functions/.env.<project> names), its security rules and indexes. `start`
// seeds it (`npm run seed -- <name> --scenario`) and prints its sign-ins. Without it: AtlasMart, the default example,
// whose rules and indexes are the top-level ones.
//
// `storage` is not started by the CLI (it would download the Storage rules runtime first, which cannot work offline):
// scripts/storage-emulator.mjs runs firebase-tools' own Storage emulator server in this process, rules evaluation off
// (docs/STORAGE.md). The command, and the CLI's emulators, get FIREBASE_STORAGE_EMULATOR_HOST and
// STORAGE_EMULATOR_HOST. With `--only storage` alone, no CLI runs: the command runs with that environment.
//
// With Hosting among the emulators, exec sets CONSOLE_ORIGIN to the console's URL, and the config the CLI gets is a
// copy of firebase.json whose Content-Security-Policy also lets the page reach the Auth emulator (emulatorCsp).
//
// --record-queries <label> records the shape of every query the code sends, in .query-log/<label>/ (cleared first),
// for the index coverage check (scripts/index-check/): it sets RETENTION_QUERY_LOG for the vitest setup file and puts
// scripts/index-check/preload.cjs in NODE_OPTIONS, which firebase-tools passes on to the Functions emulator's workers.
//
// EMULATOR_PORT_OFFSET=N shifts every port by N (writes firebase.port-N.json), so two developers or
// helpers can run suites side by side on one machine. CI and the README use the fixed defaults.
import { spawn, execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync, readFileSync, statSync, symlinkSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ensureLocalEvidenceKey, ensureLocalProcessorKeys } from "./local-evidence-key.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const GCLOUD_JAR = "/usr/lib/google-cloud-sdk/platform/cloud-firestore-emulator/cloud-firestore-emulator.jar";
const MAIN_CLASS = "com.google.cloud.datastore.emulator.firestore.CloudFirestore";
const DEFAULT_EXAMPLE = "atlasmart";

/** An example app's manifest (examples/<name>/example.json), its rules and indexes resolved from the repo root. */
function readExample(name) {
  if (!/^[a-z0-9-]+$/.test(name)) fail(`--example needs an example's folder name (got ${name})`);
  const dir = join(root, "examples", name);
  const file = join(dir, "example.json");
  if (!existsSync(file)) fail(`No example ${name}: ${file} is missing. The examples: ${readdirSync(join(root, "examples")).join(", ")}.`);
  const example = JSON.parse(readFileSync(file, "utf8"));
  return { ...example, rules: resolve(dir, example.firestore.rules), indexes: resolve(dir, example.firestore.indexes) };
}

function fail(message) {
  process.stderr.write(`\n[emulators] ${message}\n\n`);
  process.exit(2);
}

/** Returns the jar the Firebase CLI should run, building the wrapper when only the gcloud jar exists. */
export function resolveFirestoreJar(env = process.env) {
  if (env.FIRESTORE_EMULATOR_BINARY_PATH) {
    if (!existsSync(env.FIRESTORE_EMULATOR_BINARY_PATH)) {
      fail(`FIRESTORE_EMULATOR_BINARY_PATH is set to ${env.FIRESTORE_EMULATOR_BINARY_PATH}, but no file is there.`);
    }
    return env.FIRESTORE_EMULATOR_BINARY_PATH;
  }
  const cacheDir = join(homedir(), ".cache", "firebase", "emulators");
  if (existsSync(cacheDir)) {
    const cached = readdirSync(cacheDir)
      .filter((f) => /^cloud-firestore-emulator-v.*\.jar$/.test(f))
      .sort()
      .reverse();
    if (cached.length > 0) return join(cacheDir, cached[0]);
  }
  const gcloudJar = env.GCLOUD_FIRESTORE_JAR ?? GCLOUD_JAR;
  if (existsSync(gcloudJar)) return buildWrapper(gcloudJar);
  fail(
    [
      "No Cloud Firestore emulator jar was found, so the emulator-backed tests cannot run (they are never skipped).",
      "Looked for, in order:",
      "  1. $FIRESTORE_EMULATOR_BINARY_PATH",
      `  2. ${cacheDir}/cloud-firestore-emulator-v*.jar (the Firebase CLI's download cache)`,
      `  3. ${gcloudJar} (the Google Cloud CLI component)`,
      "Install one of them, e.g. `gcloud components install cloud-firestore-emulator`",
      "(or the Debian package google-cloud-cli-firestore-emulator), and Java 17+ on PATH.",
    ].join("\n"),
  );
}

function buildWrapper(gcloudJar) {
  const dir = join(root, ".emulators");
  mkdirSync(dir, { recursive: true });
  const wrapper = join(dir, "firestore-emulator-wrapper.jar");
  const manifest = `Main-Class: ${MAIN_CLASS}\nClass-Path: file:${gcloudJar}\n`;
  const manifestPath = join(dir, "manifest.txt");
  const stale = !existsSync(wrapper) || !existsSync(manifestPath) || readFileSync(manifestPath, "utf8") !== manifest;
  if (stale) {
    writeFileSync(manifestPath, manifest);
    try {
      execFileSync("jar", ["cfm", wrapper, manifestPath], { stdio: "inherit" });
    } catch {
      fail("Could not build the Firestore emulator wrapper jar: the `jar` tool (JDK 17+) is needed on PATH.");
    }
  }
  return wrapper;
}

const GCLOUD_PUBSUB_HOME = "/usr/lib/google-cloud-sdk/platform/pubsub-emulator";

/**
 * The Pub/Sub emulator only matters for loading the scheduled functions (onSchedule needs it to register;
 * schedules never fire in the emulator). The CLI's own download cannot work offline, so reuse the gcloud
 * component: a copy of its launcher in .emulators/ with lib/ linked to the component's jars (the CLI chmods
 * the file it is given, so it must not be a system file). Returns null when there is none.
 */
function resolvePubsubBinary(env = process.env) {
  if (env.PUBSUB_EMULATOR_BINARY_PATH) return env.PUBSUB_EMULATOR_BINARY_PATH;
  const launcher = join(GCLOUD_PUBSUB_HOME, "bin", "cloud-pubsub-emulator");
  if (!existsSync(launcher)) return null;
  const home = join(root, ".emulators", "pubsub-emulator");
  mkdirSync(join(home, "bin"), { recursive: true });
  const copy = join(home, "bin", "cloud-pubsub-emulator");
  if (!existsSync(copy)) writeFileSync(copy, readFileSync(launcher), { mode: 0o755 });
  if (!existsSync(join(home, "lib"))) symlinkSync(join(GCLOUD_PUBSUB_HOME, "lib"), join(home, "lib"));
  return copy;
}

function configWithOffset(offset, withHosting, example) {
  const own = example.name === DEFAULT_EXAMPLE;
  if (!offset && !withHosting && own) return "firebase.json";
  const config = JSON.parse(readFileSync(join(root, "firebase.json"), "utf8"));
  // Another example: its own rules and indexes (paths relative to the repo root, where the config is written).
  if (!own) config.firestore = { ...config.firestore, rules: relative(root, example.rules), indexes: relative(root, example.indexes) };
  for (const [name, value] of Object.entries(config.emulators)) {
    if (value && typeof value === "object") {
      for (const key of ["port", "websocketPort"]) if (typeof value[key] === "number") value[key] += offset;
    }
    void name;
  }
  if (withHosting) emulatorCsp(config);
  const file = own ? `firebase.port-${offset}.json` : `firebase.port-${offset}.${example.name}.json`;
  writeFileSync(join(root, file), JSON.stringify(config, null, 2));
  return file;
}

/**
 * The Hosting emulator serves the console with the deployed headers, except that its Content-Security-Policy
 * must also let the page reach the Auth emulator (plain http on 127.0.0.1), and must not upgrade that to https.
 * Only the emulator's copy of the config changes; firebase.json keeps the production policy.
 */
function emulatorCsp(config) {
  const auth = config.emulators.auth;
  for (const rule of config.hosting?.headers ?? []) {
    for (const h of rule.headers ?? []) {
      if (h.key !== "Content-Security-Policy") continue;
      h.value = h.value
        .split(";")
        .map((d) => d.trim())
        .filter((d) => d !== "upgrade-insecure-requests")
        .map((d) => (d.startsWith("connect-src ") ? `${d} http://${auth.host}:${auth.port}` : d))
        .join("; ");
    }
  }
  return config;
}

/** The environment that turns query recording on (see --record-queries above); clears the label's old log first. */
function queryLogEnv(label) {
  const dir = join(root, ".query-log", label);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const preload = join(root, "scripts", "index-check", "preload.cjs");
  const nodeOptions = [process.env.NODE_OPTIONS, `--require ${JSON.stringify(preload)}`].filter(Boolean).join(" ");
  process.stderr.write(`[emulators] recording query shapes in .query-log/${label}/\n`);
  return { RETENTION_QUERY_LOG: dir, NODE_OPTIONS: nodeOptions };
}

function requireJava() {
  try {
    execFileSync("java", ["-version"], { stdio: "ignore" });
  } catch {
    fail("Java is not on PATH. The Firestore emulator needs Java 17 or newer (e.g. `apt-get install openjdk-17-jre-headless`).");
  }
}

/**
 * Node's fetch (undici), which the Cloud Storage client and the tests use, refuses to connect to port 10080 (a
 * "bad port" of the fetch standard), so an offset that lands an HTTP emulator there is refused up front.
 */
const FETCH_BAD_PORT = 10080;

async function main() {
  const args = process.argv.slice(2);
  const mode = args.shift();
  if (mode !== "exec" && mode !== "start") fail("usage: emulators.mjs exec [--only list] -- <command> | start");
  // Storage is in the default set: a data map with storage entries (AtlasMart's) lists objects whenever it plans.
  let only = "firestore,auth,functions,tasks,storage";
  const onlyIdx = args.indexOf("--only");
  if (onlyIdx >= 0) {
    only = args[onlyIdx + 1];
    args.splice(onlyIdx, 2);
  }
  let exampleName = DEFAULT_EXAMPLE;
  const exampleIdx = args.indexOf("--example");
  if (exampleIdx >= 0 && (exampleIdx < args.indexOf("--") || args.indexOf("--") < 0)) {
    exampleName = args[exampleIdx + 1] ?? "";
    args.splice(exampleIdx, 2);
  }
  const example = readExample(exampleName);
  const PROJECT = example.project;
  let recordQueries = null;
  const recordIdx = args.indexOf("--record-queries");
  if (recordIdx >= 0 && (recordIdx < args.indexOf("--") || args.indexOf("--") < 0)) {
    recordQueries = args[recordIdx + 1];
    if (!recordQueries || !/^[a-z0-9-]+$/.test(recordQueries)) fail("--record-queries needs a label (letters, digits, dashes)");
    args.splice(recordIdx, 2);
  }
  const dash = args.indexOf("--");
  const command = dash >= 0 ? args.slice(dash + 1) : args;
  if (mode === "exec" && command.length === 0) fail("exec needs a command after --");

  const cliOnly = only.split(",").filter((name) => name !== "storage");
  const withStorage = cliOnly.length < only.split(",").length;
  const withCli = cliOnly.length > 0;
  if (withCli) requireJava();
  if (ensureLocalEvidenceKey(root) !== "kept") process.stderr.write("[emulators] wrote a new evidence key to functions/.secret.local (emulators only)\n");
  const processorKeys = ensureLocalProcessorKeys(root);
  if (processorKeys.length > 0) process.stderr.write(`[emulators] wrote processor keys to functions/.secret.local (emulators only): ${processorKeys.join(", ")}\n`);
  const jar = withCli ? resolveFirestoreJar() : null;
  if (only.includes("functions") && !existsSync(join(root, "functions", "lib", "index.js"))) {
    fail("functions/lib/index.js is missing. Run `npm run build` first.");
  }
  let pubsub = null;
  if (mode === "start" && onlyIdx < 0) {
    pubsub = resolvePubsubBinary();
    if (pubsub) cliOnly.push("pubsub");
    else process.stderr.write("[emulators] no Pub/Sub emulator found: the scheduled functions will not load (run them with `npx retention run`).\n");
  }
  if (mode === "start" && onlyIdx < 0) cliOnly.push("hosting");
  const withHosting = cliOnly.includes("hosting");
  if (withHosting && !existsSync(join(root, "console", "dist", "index.html"))) {
    fail("console/dist/index.html is missing: the Hosting emulator serves the built console. Run `npm run build` first.");
  }
  const offset = Number(process.env.EMULATOR_PORT_OFFSET ?? 0);
  const configFile = configWithOffset(offset, withHosting, example);
  const config = JSON.parse(readFileSync(join(root, configFile), "utf8"));
  const em = config.emulators;
  // Every emulator this run starts is reached over HTTP by fetch somewhere (the tests clear Firestore and Auth through
  // their REST endpoints; the Storage client is fetch itself): offset 2000 puts Firestore's 8080 there.
  const started = [...cliOnly, ...(withStorage ? ["storage"] : [])];
  for (const name of started) {
    if (em[name]?.port === FETCH_BAD_PORT) fail(`EMULATOR_PORT_OFFSET=${offset} puts the ${name} emulator on port ${FETCH_BAD_PORT}, which Node's fetch refuses to reach. Pick another offset.`);
  }
  const storage = withStorage ? await startStorage(em.storage, PROJECT) : null;
  const env = {
    ...process.env,
    ...(jar ? { FIRESTORE_EMULATOR_BINARY_PATH: jar } : {}),
    ...(pubsub ? { PUBSUB_EMULATOR_BINARY_PATH: pubsub } : {}),
    GCLOUD_PROJECT: PROJECT,
    // The Functions emulator gives a new worker 30 s to load the functions, then drops the request unanswered.
    // Twenty parallel calls start twenty workers at once; on a loaded 2-core machine they have taken longer.
    FUNCTIONS_DISCOVERY_TIMEOUT: process.env.FUNCTIONS_DISCOVERY_TIMEOUT ?? "120",
    // Only when the Functions emulator runs: suites read it to know whether triggers react to what they write (test/helpers/triggers.ts).
    ...(cliOnly.includes("functions") ? { FUNCTIONS_EMULATOR_ORIGIN: `http://127.0.0.1:${em.functions.port}` } : {}),
    RETENTION_PROJECT_ID: PROJECT,
    ...(withHosting ? { CONSOLE_ORIGIN: `http://${em.hosting.host}:${em.hosting.port}` } : {}),
    ...(storage ? storageEnv(em.storage) : {}),
    ...(recordQueries ? queryLogEnv(recordQueries) : {}),
  };
  if (jar) process.stderr.write(`[emulators] Firestore jar: ${jar} (${statSync(jar).size} bytes); config ${configFile}\n`);
  const firebaseArgs =
    mode === "exec"
      ? ["emulators:exec", "--project", PROJECT, "--config", configFile, "--only", cliOnly.join(","), command.join(" ")]
      : ["emulators:start", "--project", PROJECT, "--config", configFile, "--only", cliOnly.join(",")];
  const firebaseBin = join(root, "node_modules", ".bin", "firebase");
  // Storage alone: no CLI; exec runs the command itself (through a shell, as emulators:exec does), start waits.
  const child = withCli
    ? spawn(firebaseBin, firebaseArgs, { cwd: root, env, stdio: "inherit" })
    : mode === "exec"
      ? spawn(command.join(" "), { cwd: root, env, stdio: "inherit", shell: true })
      : null;
  const stopStorage = () => (storage ? storage.stop().catch(() => undefined) : Promise.resolve());
  const exit = (code) => void stopStorage().then(() => process.exit(code));
  const forward = (signal) => (child ? child.kill(signal) : exit(0));
  process.on("SIGINT", forward);
  process.on("SIGTERM", forward);
  child?.on("exit", (code, signal) => exit(code ?? (signal ? 1 : 0)));
  if (!child) process.stdout.write(`[emulators] Storage emulator on ${storageEnv(em.storage).STORAGE_EMULATOR_HOST} (Ctrl-C stops)\n`);
  if (mode === "start" && withCli) {
    seedWhenReady(em, env, example).catch((err) => {
      process.stderr.write(`[start] seeding the demo failed: ${err.message}\n`);
      child.kill("SIGINT");
    });
  }
}

/** Starts the Storage emulator in this process (scripts/storage-emulator.mjs); fails the harness if it cannot. */
async function startStorage({ host, port }, PROJECT) {
  const started = Date.now();
  const { startStorageEmulator } = await import("./storage-emulator.mjs");
  try {
    const storage = await startStorageEmulator({ host, port, projectId: PROJECT });
    process.stderr.write(`[emulators] Storage emulator (Admin SDK only, no rules) on ${host}:${port}, up in ${Date.now() - started} ms\n`);
    return storage;
  } catch (err) {
    fail(`The Storage emulator could not start on ${host}:${port}: ${err.message}`);
  }
}

/** What points the Admin SDK (host:port) and the Cloud Storage client (a URL) at the Storage emulator. */
const storageEnv = ({ host, port }) => ({ FIREBASE_STORAGE_EMULATOR_HOST: `${host}:${port}`, STORAGE_EMULATOR_HOST: `http://${host}:${port}` });

async function seedWhenReady(em, env, example) {
  const hub = `http://${em.hub.host}:${em.hub.port}/emulators`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      const res = await fetch(hub);
      const running = await res.json();
      if (["firestore", "auth", "functions"].every((name) => name in running)) break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error("emulators did not come up within 120 s");
    await new Promise((r) => setTimeout(r, 500));
  }
  // An example that names a demo webhook (example.json `demoWebhook`): a local stand-in for that processor's vendor,
  // which the seed's erasure reaches (scripts/demo-webhook.mjs); it runs until the harness stops.
  let webhook = null;
  if (example.demoWebhook) {
    const { startDemoWebhook } = await import("./demo-webhook.mjs");
    const port = 8790 + Number(process.env.EMULATOR_PORT_OFFSET ?? 0);
    webhook = await startDemoWebhook({ root, processor: example.demoWebhook.processor, secret: example.demoWebhook.secret, port });
  }
  const seedEnv = {
    ...env,
    FIRESTORE_EMULATOR_HOST: `127.0.0.1:${em.firestore.port}`,
    FIREBASE_AUTH_EMULATOR_HOST: `127.0.0.1:${em.auth.port}`,
    ...(webhook ? { RETENTION_PROCESSOR_ENDPOINTS: `${example.demoWebhook.processor}=${webhook.url}` } : {}),
  };
  // The example's own seed (scripts/seed.ts), as `npm run seed -- <name> --scenario` runs it.
  await new Promise((resolvePromise, reject) => {
    // With Storage, the example's objects too (avatars, uploads, a tenant's files).
    const seed = spawn(join(root, "node_modules", ".bin", "tsx"), [join(root, "scripts", "seed.ts"), example.name, ...(env.STORAGE_EMULATOR_HOST ? ["--objects"] : []), "--scenario"], { cwd: root, env: seedEnv, stdio: "inherit" });
    seed.on("exit", (code) => (code === 0 ? resolvePromise() : reject(new Error(`the seed of ${example.name} exited ${code}`))));
  });
  const fn = `http://127.0.0.1:${em.functions.port}/${env.GCLOUD_PROJECT}/us-central1`;
  const consoleUrl = `http://${em.hosting.host}:${em.hosting.port}/`;
  const column = (rows) => {
    const width = Math.max(...rows.map(([a]) => a.length)) + 3;
    return rows.map(([a, b]) => `   ${b ? a.padEnd(width) : a}${b ? `# ${b}` : ""}`.trimEnd()).join("\n");
  };
  process.stdout.write(`
────────────────────────────────────────────────────────────────────────────
 The retention control plane is running on the emulators with ${example.title} (Ctrl-C stops).
   Project ${env.GCLOUD_PROJECT}: its rules ${relative(root, example.rules)}, its indexes ${relative(root, example.indexes)}
   Firestore  127.0.0.1:${em.firestore.port}    Auth  127.0.0.1:${em.auth.port}    Functions  ${fn}${
     env.STORAGE_EMULATOR_HOST ? `\n   Storage    ${env.STORAGE_EMULATOR_HOST} (Admin SDK only: no security rules)` : ""
   }

 Compliance console:  ${consoleUrl}${
   webhook ? `\n Processor ${example.demoWebhook.processor}: a local webhook at ${webhook.url} received the demo's erasure (its lines above, [demo-webhook])` : ""
 }
 Sign in with the demo password "${example.password}":
${example.signIns.map(([who, what]) => `   ${who.padEnd(40)} ${what}`).join("\n")}

 Try next, in another terminal:
   export GCLOUD_PROJECT=${env.GCLOUD_PROJECT} FIRESTORE_EMULATOR_HOST=127.0.0.1:${em.firestore.port} FIREBASE_AUTH_EMULATOR_HOST=127.0.0.1:${em.auth.port}${
     env.STORAGE_EMULATOR_HOST ? ` FIREBASE_STORAGE_EMULATOR_HOST=${env.FIREBASE_STORAGE_EMULATOR_HOST} STORAGE_EMULATOR_HOST=${env.STORAGE_EMULATOR_HOST}` : ""
   }
${column(example.tryNext)}
 Callables (e.g. requestAccountDeletion) are at ${fn}/<name>; see README.md.
────────────────────────────────────────────────────────────────────────────
`);
}

// Run as a script; imported (the kit tests use resolveFirestoreJar), it starts nothing.
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
