/**
 * The function kit, adopted the way a team adopts it, offline (docs/KIT.md). A scratch Firebase project for the social
 * example (a functions codebase of its own with one callable, its own rules and indexes, its published registry in
 * policies/) follows the README's "Add it to your project" block line by line; the only liberties, each said where it
 * is taken: `npm ci` is what `npm run build` before this suite already did, `npx firebase-tools@15` is the npm alias
 * this repository pins (run non-interactively with a dummy token, as the offline install needs), and the deploy is
 * the emulators. Then:
 * 1. install: the kit stanza, the kit's codebase, the instance's config, and the rules and indexes with their
 *    retention part merged in (setup again changes nothing);
 * 2. the kit's functions on the emulators next to the project's own (firebase-tools 15 for Functions, Auth and Cloud
 *    Tasks; 14.27 for Firestore, which 15 will not start on Java 17), driving the social example's flow through them:
 *    a request, a hold whose flagging runs on the instance's own task queue, the purge, the evidence; and the Auth
 *    backstop in its 2nd-gen form;
 * 3. upgrade: the next kit version and a registry that publishes its next version, while a purge of the installed version is running
 *    (stopped mid-unit in a process of its own, as an instance the rollout replaces), with requests open and a hold
 *    in place: the purge resumes from its checkpoint with no batch done twice, the requests finish, the hold keeps
 *    what it holds, the evidence chains verify across both versions.
 * 4. a second instance of the kit, governing a database of its own, installed beside the first: both run on one
 *    Functions emulator, each instance's callables, task queues and data its own (docs/KIT.md, "Several instances").
 * What cannot run here: the kit's Firestore delete triggers (ttlDeleted-*) load but get no events, because only a
 * Firestore emulator the same firebase-tools process started registers them (docs/KIT.md).
 */
import { fork, type ChildProcess } from "node:child_process";
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { getAuth } from "firebase-admin/auth";
import { getStorage } from "firebase-admin/storage";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CallableName, CallableOutput } from "../../functions/src/contract";
import { verifyEvidence } from "../../functions/src/evidence/verify";
import { checkQuery } from "../../functions/src/indexes/rules";
import { DAY_MS, PolicyIndex } from "../../functions/src/kernel/policy";
import { adminApp, inDatabase } from "../../functions/src/platform/firestore";
import { setEnvLine } from "../../functions/src/setup/rules/project";
import { defaultBucket } from "../../functions/src/platform/storage";
import { registryQueries } from "../../functions/src/setup/rules/indexes";
import { socialLock, socialRegistry } from "../../examples/social/registry";
import { seedSocial, useSocialRegistry } from "../../examples/social/seed";
import { call, db, idTokenFor, waitFor } from "../helpers/emulator";
import {
  Background,
  emulatorEnv,
  FIREBASE_15,
  firebaseJsonOf,
  KIT_PROJECT,
  loadedFunctions,
  packNextVersion,
  readmeSteps,
  REPO,
  run,
  scratchDir,
  startFirestore,
  startFunctions,
  startStorage,
  writeOwnFunctions,
} from "../helpers/kit";

const PREFIX = "kit-retention-";
/** The database the second instance governs. */
const EU_DB = "social-eu";
/** The app's current published registry version (the social example's), and the one the upgrade publishes. */
const CURRENT = socialLock().at(-1)!.version;
const NEXT = `v${Number(CURRENT.slice(1)) + 1}`;
const kitFn = (name: string): string => `${PREFIX}${name}`;

async function ok<N extends CallableName>(name: N, data: unknown, token: string): Promise<CallableOutput<N>> {
  const r = await call<CallableOutput<N>>(kitFn(name), data, token);
  if (!r.ok) throw new Error(`${kitFn(name)} failed: ${JSON.stringify(r.error)}`);
  return r.data;
}

const exists = async (path: string): Promise<boolean> => (await db().doc(path).get()).exists;
const objectExists = async (name: string): Promise<boolean> => (await getStorage(adminApp()).bucket(defaultBucket()).file(name).exists())[0];
const readJson = <T = Record<string, unknown>>(file: string): T => JSON.parse(readFileSync(file, "utf8")) as T;
/** firebase-tools reads the index file with cjson (comments allowed): the same parser here. */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const cjson = require("cjson") as { load: (file: string) => unknown };

/** The team's rules: the social example's, with the retention part not yet written (only its two marker lines). */
function rulesWithEmptyBlock(): string {
  const text = readFileSync(join(REPO, "examples", "social", "firestore.rules"), "utf8");
  const begin = text.indexOf("// <retention:begin>");
  const end = text.indexOf("// <retention:end>");
  return `${text.slice(0, text.indexOf("\n", begin) + 1)}    ${text.slice(end)}`;
}

/** The team's own index: the chat list of its app (member, visible), which no retention query needs. */
const APP_INDEX = { collectionGroup: "chats", queryScope: "COLLECTION", fields: [{ fieldPath: "memberIds", arrayConfig: "CONTAINS" }, { fieldPath: "lifecycleState", order: "ASCENDING" }] };

describe("the function kit, adopted into a project of its own", () => {
  const scratch = scratchDir();
  const project = scratch.dir;
  const codebase = join(project, "retention");
  let packed = "";
  let installReport = "";
  let firestore: Background | undefined;
  let storage: { stop: () => Promise<void> } | undefined;
  let functions: Background | undefined;
  let oldRunner: ChildProcess | undefined;
  const tokens: Record<"ana" | "bo" | "dana" | "eli" | "ops", string> = { ana: "", bo: "", dana: "", eli: "", ops: "" };
  const requests: Record<"ana" | "bo" | "cy", string> = { ana: "", bo: "", cy: "" };
  let holdId = "";

  beforeAll(() => {
    Object.assign(process.env, emulatorEnv());
    writeFileSync(join(project, "firebase.json"), `${JSON.stringify(firebaseJsonOf(), null, 2)}\n`);
    writeFileSync(join(project, ".firebaserc"), `${JSON.stringify({ projects: { default: KIT_PROJECT } }, null, 2)}\n`);
    writeFileSync(join(project, "firestore.rules"), rulesWithEmptyBlock());
    writeFileSync(join(project, "firestore.indexes.json"), `${JSON.stringify({ indexes: [APP_INDEX], fieldOverrides: [] }, null, 2)}\n`);
    cpSync(join(REPO, "examples", "social", "policies"), join(project, "policies"), { recursive: true });
    writeOwnFunctions(project);
  }, 300_000);

  afterAll(async () => {
    oldRunner?.kill("SIGKILL");
    await functions?.stop();
    await firestore?.stop();
    await storage?.stop();
    if (packed) rmSync(packed, { force: true });
    scratch.remove();
  }, 120_000);

  it("follows the README: the kit stanza beside the project's codebase, the kit's codebase, the instance's config, the rules and indexes with their retention part", () => {
    const steps = readmeSteps();
    let cwd = REPO;
    const offline = { npm_config_offline: "true" };
    for (const step of steps) {
      const words = step.split(/\s+/).map((w) => w.replace(/^~\/firestore-retention/, REPO).replace(/^~\/my-app/, project));
      if (words[0] === "cd") {
        cwd = words[1]!;
        continue;
      }
      if (step === "npm ci") continue; // what `npm run build`, which npm test runs first, has done
      if (step === "npm pack ./packages/kit") {
        const out = run("npm", ["pack", "./packages/kit"], cwd).stdout.trim().split("\n").at(-1)!;
        packed = join(cwd, out);
        continue;
      }
      if (words[0] === "npx" && words[1] === "firebase-tools@15") {
        if (words[2] === "deploy") continue; // offline: the emulators below stand in for the deploy
        const args = [FIREBASE_15, ...words.slice(2), "--non-interactive", "--no-configure", "--project", KIT_PROJECT];
        const r = run(process.execPath, args, cwd, { ...offline, FIREBASE_TOKEN: "offline-test-token" });
        if (words[2] === "functions:kits:install") installReport = r.stdout + r.stderr;
        continue;
      }
      if (words[0] === "npx" && words[1] === "--prefix") {
        run("npx", words.slice(1), cwd, offline);
        continue;
      }
      throw new Error(`the README's adoption block has a step this suite does not know how to run offline: ${step}`);
    }
    // The README names the tarball npm pack writes (its version is the kit's).
    const version = readJson<{ version: string }>(join(REPO, "packages", "kit", "package.json")).version;
    expect(packed).toBe(join(REPO, `firestore-retention-${version}.tgz`));

    // firebase.json: the project's own codebase as it was, the kit's stanza, the console's site.
    const fj = readJson<{ functions: Record<string, unknown>[]; hosting: Record<string, unknown>[] }>(join(project, "firebase.json"));
    expect(fj.functions[0]).toEqual((firebaseJsonOf().functions as unknown[])[0]);
    expect(fj.functions[1]).toMatchObject({ kit: "retention", source: "retention", instances: { retention: "function-kits/retention/config-retention" } });
    expect(fj.functions[1]!.ignore).toEqual(expect.arrayContaining(["node_modules", "*.local"]));
    expect(fj.hosting).toHaveLength(1);
    expect(fj.hosting[0]).toMatchObject({ site: "my-app-retention", public: "retention/node_modules/firestore-retention/console" });
    expect(fj.hosting[0]!.rewrites).toContainEqual({ source: "/api/placeRetentionHold", function: { functionId: "kit-retention-placeRetentionHold", region: "us-central1" } });
    expect(existsSync(join(project, "retention", "node_modules", "firestore-retention", "console", "index.html"))).toBe(true);

    // The kit's codebase: on the tarball, the SDKs it was tested with, its lockfile; the instance's registry, the app's current.
    const pkg = readJson<{ dependencies: Record<string, string> }>(join(codebase, "package.json"));
    expect(pkg.dependencies).toEqual({ "firestore-retention": `file:firestore-retention-${version}.tgz`, "firebase-admin": "13.9.0", "firebase-functions": "7.4.0" });
    expect(readJson<{ version: string }>(join(codebase, "node_modules", "firestore-retention", "package.json")).version).toBe(version);
    expect(readJson<{ current: { version: string } }>(join(codebase, "registries", "retention.json")).current.version).toBe(CURRENT);
    expect(readFileSync(join(codebase, ".secret.local"), "utf8")).toMatch(/^RETENTION_EVIDENCE_KEY=[0-9a-f]{64}$/m);
    // The instance's config: its project's file, and the emulators' settings.
    expect(existsSync(join(project, "function-kits", "retention", "config-retention", `.env.${KIT_PROJECT}`))).toBe(true);
    expect(readFileSync(join(project, "function-kits", "retention", "config-retention", ".env.local"), "utf8")).toContain("RETENTION_ENFORCE_APP_CHECK=false");

    // What firebase-tools will create at the first deploy, from the kit's manifest: its functions and its roles.
    expect(installReport).toContain("kit-retention-requestAccountDeletion");
    expect(installReport).toContain("kit-retention-ttlDeleted-notifications");
    expect(installReport).toMatch(/Cloud Datastore User/);
    expect(installReport).toMatch(/roles will be granted to the kit service account/);

    // The rules: the retention part written between the team's markers, exactly what the example's rules suite proves.
    expect(readFileSync(join(project, "firestore.rules"), "utf8")).toBe(readFileSync(join(REPO, "examples", "social", "firestore.rules"), "utf8"));
    // The indexes: the team's own kept, and every query the engine builds from the registry served, TTL policy included.
    const indexes = cjson.load(join(project, "firestore.indexes.json")) as { indexes: Record<string, unknown>[]; fieldOverrides: Record<string, unknown>[] };
    expect(indexes.indexes[0]).toEqual(APP_INDEX);
    expect(indexes.fieldOverrides).toContainEqual({ collectionGroup: "notifications", fieldPath: "expireAt", ttl: true, indexes: [{ order: "ASCENDING", queryScope: "COLLECTION" }] });
    for (const q of registryQueries(new PolicyIndex(socialRegistry()).forCell("primary"))) expect(checkQuery(indexes as never, q.shape).status, q.why).not.toBe("missing");
    expect(readFileSync(join(project, "firestore.indexes.json"), "utf8")).toContain("// <retention:begin>");

    // The package's two exports resolve from the codebase: "./lib" gives the handlers without deploying anything.
    const lib = run(process.execPath, ["-e", "const l = require('firestore-retention/lib'); console.log(JSON.stringify(Object.keys(l).sort()))"], codebase).stdout;
    expect(JSON.parse(lib)).toEqual(expect.arrayContaining(["placeRetentionHoldHandler", "purgeOnSchedule", "handleAuthUserDeleted", "processTtlDelete", "enforceCodebaseRegistry"]));
    expect(readJson<{ exports: Record<string, unknown>; peerDependencies: Record<string, string> }>(join(codebase, "node_modules", "firestore-retention", "package.json"))).toMatchObject({
      exports: { ".": { types: "./lib/kit/index.d.ts" }, "./lib": { types: "./lib/kit/lib.d.ts" } },
      peerDependencies: { "firebase-functions": "7.4.0" },
    });
    for (const f of ["lib/kit/index.d.ts", "lib/kit/lib.d.ts", "npm-shrinkwrap.json"]) expect(existsSync(join(codebase, "node_modules", "firestore-retention", f)), f).toBe(true);
    expect(existsSync(join(codebase, "node_modules", "firestore-retention", "lib", "generated"))).toBe(false);

    // Setup is idempotent: a second run would change nothing.
    run("npx", ["--prefix", "retention", "retention", "setup", "--console", "my-app-retention", "--check"], project, offline);
  });

  it("runs the kit's functions on the emulators beside the project's own, and the social example's flow through them: request, hold, purge, evidence", async () => {
    firestore = await startFirestore(project);
    storage = await startStorage();
    functions = await startFunctions(project, ["greet", kitFn("requestAccountDeletion"), kitFn("applyRetentionHold")]);
    const loaded = await loadedFunctions();
    // Both codebases side by side: the team's function, and the kit instance's, prefixed.
    expect(loaded.some((f) => f.endsWith("greet"))).toBe(true);
    expect(loaded.filter((f) => f.includes(PREFIX)).length).toBeGreaterThanOrEqual(25);
    expect(loaded.some((f) => f.includes("kit-retention-onAuthUserDeleted"))).toBe(true);

    // The suite's own engine calls sign with the instance's key (the emulated functions read it from the codebase).
    process.env.RETENTION_EVIDENCE_KEY = /^RETENTION_EVIDENCE_KEY=(\S+)$/m.exec(readFileSync(join(codebase, ".secret.local"), "utf8"))![1]!;
    useSocialRegistry();
    // The app's objects too: its data map erases each user's uploads (the Storage emulator, Admin SDK only).
    await seedSocial({ nowMs: Date.now(), withObjects: true });
    Object.assign(tokens, {
      ana: await idTokenFor({ uid: "u-ana" }),
      bo: await idTokenFor({ uid: "u-bo" }),
      dana: await idTokenFor({ uid: "s-dana", claims: { roles: ["compliance"] } }),
      eli: await idTokenFor({ uid: "s-eli", claims: { roles: ["compliance"] } }),
      ops: await idTokenFor({ uid: "s-ops", claims: { roles: ["retention-admin"] } }),
    });

    const greeted = await call<{ hello: string }>("greet", {}, tokens.ana);
    expect(greeted).toEqual({ ok: true, data: { hello: "u-ana" } });
    const enforced = await ok("getRetentionRegistry", {}, tokens.dana);
    expect(enforced.version).toBe(CURRENT);
    expect(enforced.registry).toEqual(socialRegistry());

    // Request: Ana asks for her erasure through the kit's callable.
    const opened = await ok("requestAccountDeletion", { reason: "leaving the app" }, tokens.ana);
    requests.ana = opened.requestId;
    expect(opened.state).toBe("PENDING");
    expect((await db().doc("posts/p-ana-1").get()).get("lifecycleState")).toBe("SOFT_DELETED");

    // Hold: compliance holds a chat she is in; its messages are flagged by a task on the instance's own queue.
    holdId = (await ok("placeRetentionHold", { targetPath: "chats/ch-trio", reasonCode: "LITIGATION", note: "dispute over the trip" }, tokens.dana)).holdId;
    await waitFor(async () => (await db().doc(`retentionHolds/${holdId}`).get()).get("applied") === true, "the hold's flagging task (kit-retention-applyRetentionHold)", 120_000);
    expect((await db().doc("chats/ch-trio/messages/m-04").get()).get("legalHold")).toBe(true);

    // Purge: past her grace, a retention-admin runs the nightly purge; the held chat stays.
    const asOf = new Date(Date.now() + 8 * DAY_MS).toISOString();
    await ok("runRetentionJob", { job: "nightlyPurge", asOf }, tokens.ops);
    expect((await ok("getDeletionStatus", { requestId: requests.ana }, tokens.dana)).state).toBe("RETAINED_UNDER_HOLD");
    for (const gone of ["users/u-ana", "posts/p-ana-1", "posts/p-ana-1/comments/c-bo-1", "chats/ch-ana-bo/messages/m-01", "notifications/n-ana-1", "users/u-bo/following/u-ana"]) expect(await exists(gone), gone).toBe(false);
    expect(await exists("chats/ch-trio/messages/m-04")).toBe(true);
    expect((await db().doc("chats/ch-ana-bo").get()).get("memberIds")).toEqual(["u-bo"]);
    // Her uploads went with her profile; Bo's are still there.
    for (const name of ["users/u-ana/avatar.jpg", "users/u-ana/uploads/route-notes.txt"]) expect(await objectExists(name), name).toBe(false);
    expect(await objectExists("users/u-bo/avatar.jpg")).toBe(true);

    // Evidence: why her post went, and who allowed it, and the chain verifies.
    const why = await ok("explainDeletion", { path: "posts/p-ana-1", verify: "chain" }, tokens.eli);
    expect(why.entries.map((e) => e.action)).toContain("PURGE_BATCH");
    expect(why.verification.ok).toBe(true);

    // The Auth backstop, 2nd gen: Cy's account deleted outside the workflow opens his erasure.
    await getAuth(adminApp()).deleteUser("u-cy");
    const cy = await waitFor(async () => (await db().collection("deletionRequests").where("uid", "==", "u-cy").get()).docs[0], "the backstop's request for u-cy", 120_000);
    expect(cy.get("source")).toBe("auth-backstop");
    requests.cy = cy.id;

    // Bo asks too; his request is open when the upgrade comes.
    requests.bo = (await ok("requestAccountDeletion", {}, tokens.bo)).requestId;
  });

  it("upgrades to the next kit version with the registry's next version published, while a purge of the installed version runs: nothing in flight is lost or done twice", async () => {
    const asOfMs = Date.now() + 8 * DAY_MS;
    // A purge of the installed version, running in a process of its own, stops after its first batch of Bo's
    // erasure: an instance of the old deployment still at work when the new one rolls out.
    const script = join(project, "old-version-purge.cjs");
    writeFileSync(
      script,
      [
        "const { join } = require('node:path');",
        "const [codebase, requestId, asOfMs] = process.argv.slice(2);",
        "const lib = (p) => require(join(codebase, 'node_modules', 'firestore-retention', 'lib', p));",
        "lib('platform/registry.js').enforceCodebaseRegistry(codebase);",
        "let stopped = false;",
        "lib('purge/job.js').runNightlyPurge({",
        "  nowMs: Number(asOfMs), asOfMs: Number(asOfMs), dryRun: false, actor: { type: 'system', id: 'nightlyPurge' },",
        "  correlationId: 'old-version-run', requestIds: [requestId], sweep: false, batchSize: 1, stepBatches: 1, parallelBatches: 1, leaseMs: 15000,",
        "  hook: async (ctx) => { if (ctx.point === 'afterExecute' && !stopped) { stopped = true; process.send({ stoppedAt: ctx }); await new Promise(() => {}); } },",
        "}).then((s) => process.send({ finished: s }), (e) => process.send({ failed: String(e && e.stack || e) }));",
      ].join("\n"),
    );
    const stopped = new Promise<Record<string, unknown>>((resolve, reject) => {
      oldRunner = fork(script, [codebase, requests.bo, String(asOfMs)], {
        cwd: codebase,
        env: { ...process.env, FIREBASE_KIT_INSTANCE_ID: "retention" },
        stdio: ["ignore", "pipe", "pipe", "ipc"],
      });
      oldRunner.on("message", (m: Record<string, unknown>) => (m.stoppedAt ? resolve(m) : reject(new Error(`the old version's purge did not stop mid-unit: ${JSON.stringify(m)}`))));
      oldRunner.on("exit", (code) => reject(new Error(`the old version's purge exited ${code}`)));
    });
    await stopped;
    const bo = await db().doc(`deletionRequests/${requests.bo}`).get();
    expect(bo.get("state")).toBe("PROCESSING");
    const boBatches = async () => (await db().collection("deletionAudits").where("requestId", "==", requests.bo).get()).docs.filter((d) => ["PURGE_BATCH", "PURGE_OBJECTS"].includes(d.get("action") as string));
    const doneByOld = await boBatches();
    expect(doneByOld.map((d) => d.get("correlationId") as unknown)).toEqual(["old-version-run"]);

    // The registry's next version: a new hold reason, which the current one does not know.
    const current = readJson<Record<string, unknown> & { holdReasons: Record<string, unknown>[] }>(join(project, "policies", "versions", `${CURRENT}.json`));
    const nextRegistry = {
      ...current,
      version: NEXT,
      description: `${String(current.description)} ${NEXT} adds the REGULATOR_INQUIRY hold reason.`,
      holdReasons: [...current.holdReasons, { code: "REGULATOR_INQUIRY", description: "A regulator's inquiry names the data.", twoPersonRelease: true, earlyReleaseAllowed: true }],
    };
    writeFileSync(join(project, "policies", "versions", `${NEXT}.json`), `${JSON.stringify(nextRegistry, null, 2)}\n`);
    const refused = await call(kitFn("placeRetentionHold"), { targetPath: "chats/ch-bo-cy", reasonCode: "REGULATOR_INQUIRY" }, tokens.dana);
    expect(refused.ok).toBe(false);

    // The upgrade, as the README says: init with the newer tarball, install, publish and set up, deploy (here: the
    // functions emulator restarted on the new code; the old version's purge is still stopped mid-unit).
    const next = packNextVersion(project);
    await functions!.stop();
    const offline = { npm_config_offline: "true" };
    run("npx", ["--prefix", "retention", "retention", "init", next.tarball], project, offline);
    run("npm", ["--prefix", "retention", "install", "--no-audit", "--no-fund"], project, offline);
    run("npx", ["--prefix", "retention", "retention", "publish", `${NEXT}.json`], project, offline);
    run("npx", ["--prefix", "retention", "retention", "setup", "--console", "my-app-retention"], project, offline);
    expect(readJson<{ version: string }>(join(codebase, "node_modules", "firestore-retention", "package.json")).version).toBe(next.version);
    expect(readdirSync(codebase).filter((f) => f.endsWith(".tgz"))).toEqual([`firestore-retention-${next.version}.tgz`]);
    functions = await startFunctions(project, ["greet", kitFn("requestAccountDeletion")]);
    const enforced = await ok("getRetentionRegistry", {}, tokens.dana);
    expect(enforced.version).toBe(NEXT);

    // The rollout ends the old instance; its lease runs out and the new version takes the unit from its checkpoint.
    oldRunner!.kill("SIGKILL");
    await waitFor(async () => {
      const expires = (await db().doc(`deletionRequests/${requests.bo}`).get()).get("lease.expiresAt") as { toMillis(): number } | undefined;
      return !expires || expires.toMillis() < Date.now();
    }, "the old version's lease to run out", 60_000);
    await ok("runRetentionJob", { job: "nightlyPurge", asOf: new Date(asOfMs).toISOString() }, tokens.ops);

    // Open requests finished, a hold still holding: Bo and Cy are erased but for the held chat, Ana still waits on it.
    for (const who of ["bo", "cy", "ana"] as const) expect((await ok("getDeletionStatus", { requestId: requests[who] }, tokens.dana)).state, who).toBe("RETAINED_UNDER_HOLD");
    for (const gone of ["users/u-bo", "posts/p-bo-1", "chats/ch-bo-cy/messages/m-06", "notifications/n-bo-1", "users/u-cy", "posts/p-cy-1"]) expect(await exists(gone), gone).toBe(false);
    for (const name of ["users/u-bo/avatar.jpg", "users/u-bo/uploads/old-bridge.jpg", "users/u-cy/avatar.jpg"]) expect(await objectExists(name), name).toBe(false);
    for (const kept of ["chats/ch-trio/messages/m-03", "chats/ch-trio/messages/m-04", "chats/ch-trio/messages/m-05"]) expect(await exists(kept), kept).toBe(true);

    // Nothing done twice: every path of Bo's erasure (documents and objects) was deleted and recorded once, the old
    // version's batch among them.
    const batches = await boBatches();
    const paths = batches.flatMap((d) => d.get("paths") as string[]);
    expect(new Set(paths).size).toBe(paths.length);
    expect(paths).toEqual(expect.arrayContaining(doneByOld[0]!.get("paths") as string[]));
    expect(new Set(batches.map((d) => d.get("correlationId") as unknown)).size).toBe(2);

    // The new registry is in force: the new reason is accepted now. The hold placed before the upgrade is released by
    // a second officer, and the three erasures finish.
    const regulator = await ok("placeRetentionHold", { targetPath: "chats/ch-bo-cy", reasonCode: "REGULATOR_INQUIRY" }, tokens.dana);
    await ok("releaseRetentionHold", { holdId: regulator.holdId, reason: "inquiry closed" }, tokens.eli);
    await ok("releaseRetentionHold", { holdId, reason: "dispute settled" }, tokens.eli);
    await ok("runRetentionJob", { job: "nightlyPurge", asOf: new Date(asOfMs).toISOString() }, tokens.ops);
    for (const who of ["bo", "cy", "ana"] as const) expect((await ok("getDeletionStatus", { requestId: requests[who] }, tokens.dana)).state, who).toBe("PURGED");
    const trio = (await db().doc("chats/ch-trio").get()).get("memberIds") as string[] | undefined;
    for (const uid of ["u-ana", "u-bo", "u-cy"]) expect(trio ?? []).not.toContain(uid);

    // The evidence chains verify across both versions: every chain, head and MAC under the instance's key.
    const verified = await verifyEvidence();
    expect(verified.findings).toEqual([]);
    expect(verified.ok).toBe(true);
    expect(verified.macs).toBe("checked");
  });
  it("a second instance on a database of its own runs beside the first: its own functions, task queues, requests, holds and evidence", async () => {
    await functions!.stop();
    // The team's second governed database gets its own rules and indexes files in firebase.json, as any database does.
    const fjFile = join(project, "firebase.json");
    const fj = readJson<Record<string, unknown>>(fjFile);
    fj.firestore = [
      { database: "(default)", rules: "firestore.rules", indexes: "firestore.indexes.json" },
      { database: EU_DB, rules: "social-eu.rules", indexes: "social-eu.indexes.json" },
    ];
    writeFileSync(fjFile, `${JSON.stringify(fj, null, 2)}\n`);
    writeFileSync(join(project, "social-eu.rules"), rulesWithEmptyBlock());
    writeFileSync(join(project, "social-eu.indexes.json"), `${JSON.stringify({ indexes: [], fieldOverrides: [] }, null, 2)}\n`);

    // Installed again, the kit gets a second instance (firebase-tools names it); its config governs the EU database.
    const offline = { npm_config_offline: "true" };
    run(process.execPath, [FIREBASE_15, "functions:kits:install", "--directory", "retention", "--non-interactive", "--no-configure", "--project", KIT_PROJECT], project, { ...offline, FIREBASE_TOKEN: "offline-test-token" });
    const instances = readJson<{ functions: { kit?: string; instances?: Record<string, string> }[] }>(fjFile).functions.find((f) => f.kit === "retention")!.instances!;
    const second = Object.keys(instances).find((i) => i !== "retention")!;
    expect(Object.keys(instances).sort()).toEqual(["retention", second].sort());
    const envFile = join(project, instances[second]!, `.env.${KIT_PROJECT}`);
    const envText = existsSync(envFile) ? readFileSync(envFile, "utf8") : "";
    // Its own primary, ledger and bucket, and its own copy of each of the registry's other databases.
    const otherDatabases = new PolicyIndex(socialRegistry()).cells().filter((c) => c !== "primary").map((c) => `${c}=${EU_DB}-${c}`).join(",");
    const euEnv: [string, string][] = [
      ["RETENTION_DATABASE_ID", EU_DB],
      ["RETENTION_LEDGER_DATABASE_ID", `${EU_DB}-ledger`],
      ["RETENTION_STORAGE_BUCKET", `${KIT_PROJECT}-eu-uploads`],
      ["RETENTION_DATABASES", otherDatabases],
    ];
    writeFileSync(envFile, euEnv.reduce((text, [k, v]) => setEnvLine(text, k, v), envText));

    // Setup refuses to run for "the" instance now that there are two, then writes the second's files only.
    const rulesBefore = readFileSync(join(project, "firestore.rules"), "utf8");
    const indexesBefore = readFileSync(join(project, "firestore.indexes.json"), "utf8");
    expect(() => run("npx", ["--prefix", "retention", "retention", "setup"], project, offline)).toThrow(/Several instances of the kit/);
    run("npx", ["--prefix", "retention", "retention", "setup", "--instance", second], project, offline);
    expect(readJson<{ current: { version: string } }>(join(codebase, "registries", `${second}.json`)).current.version).toBe(NEXT);
    expect(readFileSync(join(project, "social-eu.rules"), "utf8")).toContain("// <retention:begin>");
    expect(readFileSync(join(project, "firestore.rules"), "utf8")).toBe(rulesBefore);
    expect(readFileSync(join(project, "firestore.indexes.json"), "utf8")).toBe(indexesBefore);

    const euFn = (name: string): string => `kit-${second}-${name}`;
    functions = await startFunctions(project, [kitFn("requestAccountDeletion"), kitFn("applyRetentionHold"), euFn("requestAccountDeletion"), euFn("applyRetentionHold"), "greet"]);
    const loaded = await loadedFunctions();
    // Both instances' functions, as many of each (the second's ids start with the first's prefix, so count it apart).
    const ofSecond = loaded.filter((f) => f.includes(`kit-${second}-`));
    const ofFirst = loaded.filter((f) => f.includes(PREFIX) && !f.includes(`kit-${second}-`));
    expect(ofSecond.length).toBeGreaterThanOrEqual(26);
    expect(ofSecond.length).toBe(ofFirst.length);

    // The EU database holds its own copy of the app's data.
    await inDatabase(EU_DB, () => seedSocial({ nowMs: Date.now(), withAuth: false }));
    const eu = (path: string) => db(EU_DB).doc(path);
    tokens.bo = await idTokenFor({ uid: "u-bo" });

    // A hold through the second instance: recorded in its database, flagged by its own task queue, unseen by the first.
    const euHold = await call<{ holdId: string }>(euFn("placeRetentionHold"), { targetPath: "chats/ch-trio", reasonCode: "LITIGATION", note: "EU dispute" }, tokens.dana);
    if (!euHold.ok) throw new Error(`${euFn("placeRetentionHold")} failed: ${JSON.stringify(euHold.error)}`);
    const euHoldId = euHold.data.holdId;
    await waitFor(async () => (await eu(`retentionHolds/${euHoldId}`).get()).get("applied") === true, `the hold's flagging task (${euFn("applyRetentionHold")})`, 120_000);
    expect((await eu("chats/ch-trio/messages/m-04").get()).get("legalHold")).toBe(true);
    expect(await exists(`retentionHolds/${euHoldId}`)).toBe(false);
    expect((await ok("listRetentionHolds", { state: "ACTIVE" }, tokens.dana)).items.map((h) => h.holdId)).not.toContain(euHoldId);

    // A request through the second instance: in its database, its data there soft-deleted; the first instance's
    // database and lists untouched.
    const euRequest = await call<{ requestId: string; state: string }>(euFn("requestAccountDeletion"), {}, tokens.bo);
    if (!euRequest.ok) throw new Error(`${euFn("requestAccountDeletion")} failed: ${JSON.stringify(euRequest.error)}`);
    expect(euRequest.data.state).toBe("PENDING");
    expect((await eu(`deletionRequests/${euRequest.data.requestId}`).get()).get("uid")).toBe("u-bo");
    expect((await eu("posts/p-bo-1").get()).get("lifecycleState")).toBe("SOFT_DELETED");
    expect(await exists(`deletionRequests/${euRequest.data.requestId}`)).toBe(false);
    expect((await ok("listDeletionRequests", {}, tokens.dana)).items.map((r) => r.requestId)).not.toContain(euRequest.data.requestId);

    // Each instance's evidence chains verify on their own.
    const euVerified = await inDatabase(EU_DB, () => verifyEvidence());
    expect(euVerified.findings).toEqual([]);
    expect(euVerified.ok).toBe(true);
    const verified = await verifyEvidence();
    expect(verified.findings).toEqual([]);
  });
});
