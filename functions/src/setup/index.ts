import { createHash, randomBytes } from "node:crypto";
import { ARCHIVE_KEK_SECRET } from "../platform/kms";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, relative, resolve } from "node:path";
import { applyEdits, modify, parse as parseJsonc, type ParseError } from "jsonc-parser";
import { x as extractTar } from "tar";
import { SECRETS, SETTINGS, type SettingSpec } from "../config/params";
import { sha256Hex } from "../kernel/canonical";
import { PolicyIndex, PRIMARY_CELL } from "../kernel/policy";
import type { Registry } from "../kernel/policy-schema";
import { parseDatabaseMap } from "../platform/settings";
import { DEFAULT_BUCKET, resolveBucket } from "../kernel/storage-map";
import { makeRegistryBundle, type RegistryBundle } from "../kernel/registry-bundle";
import { checkRegistry, collectionsInRules, type LockEntry } from "../kernel/registry-check";
import { REGISTRY_FILE } from "../config/params";
import { generateRetentionRules, RULES_BEGIN, RULES_END, spliceRetentionRules } from "../security-rules/index";
import { CODEBASE_GITIGNORE, codebaseDependencies, codebaseIndex, codebaseLockfile, codebasePackageJson, type KitManifest, type KitTarball, type Lockfile } from "./rules/codebase";
import { consoleHosting } from "./rules/hosting";
import { IndexFileError, spliceIndexFile } from "./rules/index-file";
import { bucketCollisions, databaseCollisions, firestoreFilesFor, instanceEnv, KIT_CODEBASE_IGNORE, kitStanzas, runOnceCommands, setEnvLine, type KitStanza } from "./rules/project";

export { IndexFileError, INDEXES_BEGIN, INDEXES_END } from "./rules/index-file";
export { consoleHosting, CONSOLE_CALLABLES } from "./rules/hosting";
export { requiredIndexes, registryQueries, CONTROL_PLANE_INDEXES, CONTROL_PLANE_OVERRIDES } from "./rules/indexes";

/** The kit's npm package: what a codebase depends on to be this kit (packages/kit/package.json's name). */
export const KIT_PACKAGE = "firestore-retention";

/** What setup or init cannot do, said so that the operator can act on it: nothing was written. */
export class SetupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SetupError";
  }
}

/** One file as it is (null: not there) and as it would be. */
export interface FileChange {
  file: string;
  before: string | null;
  after: string;
}

const read = (file: string): string | null => (existsSync(file) ? readFileSync(file, "utf8") : null);
const changeOf = (cwd: string, file: string, after: string): FileChange[] => {
  const before = read(resolve(cwd, file));
  return before === after ? [] : [{ file, before, after }];
};

function readJsonc(file: string, text: string): Record<string, unknown> {
  const errors: ParseError[] = [];
  const value = parseJsonc(text, errors, { allowTrailingComma: false }) as unknown;
  if (errors.length > 0 || !value || typeof value !== "object") throw new SetupError(`${file} is not valid JSON.`);
  return value as Record<string, unknown>;
}

const FORMAT = { formattingOptions: { insertSpaces: true, tabSize: 2, eol: "\n" } };

/** Writes every change (folders made as needed). */
export function applyChanges(cwd: string, changes: readonly FileChange[]): void {
  for (const c of changes) {
    const file = resolve(cwd, c.file);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, c.after);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// retention init: the kit's codebase in the project, from a kit tarball

/** The kit's package.json and npm-shrinkwrap.json, read out of its tarball (npm's `package/` layout). */
export function readKitTarball(tgz: string): { manifest: KitManifest; shrinkwrap: Lockfile; integrity: string } {
  if (!existsSync(tgz)) throw new SetupError(`${tgz}: no such kit tarball (build one with \`npm pack ./packages/kit\` in a clone of the kit's repository).`);
  const dir = mkdtempSync(join(tmpdir(), "retention-kit-"));
  try {
    extractTar({ file: tgz, cwd: dir, sync: true, filter: (p) => p === "package/package.json" || p === "package/npm-shrinkwrap.json" });
    const manifestFile = join(dir, "package", "package.json");
    const shrinkwrapFile = join(dir, "package", "npm-shrinkwrap.json");
    if (!existsSync(manifestFile)) throw new SetupError(`${tgz} is not an npm package tarball (no package/package.json).`);
    const manifest = JSON.parse(readFileSync(manifestFile, "utf8")) as KitManifest;
    if (manifest.name !== KIT_PACKAGE) throw new SetupError(`${tgz} is ${manifest.name}@${manifest.version}, not the ${KIT_PACKAGE} kit.`);
    if (!existsSync(shrinkwrapFile)) throw new SetupError(`${tgz} has no npm-shrinkwrap.json: the kit pins its dependencies, so this is not a kit build.`);
    const shrinkwrap = JSON.parse(readFileSync(shrinkwrapFile, "utf8")) as Lockfile;
    const integrity = `sha512-${createHash("sha512").update(readFileSync(tgz)).digest("base64")}`;
    return { manifest, shrinkwrap, integrity };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface InitPlan {
  dir: string;
  kit: KitTarball;
  /** The kit version the codebase had before (an upgrade), if any. */
  previousVersion: string | null;
  changes: FileChange[];
  /** Tarballs of other versions of the kit in the codebase, removed when the plan is applied. */
  stale: string[];
  tarball: string;
}

/**
 * The kit's codebase at `dir` (relative to `cwd`) for the kit in `tgz`: its package.json and lockfile (rewritten for
 * the tarball's version: how the codebase is upgraded too), its index and .gitignore (written once; the team's
 * afterwards) and the tarball beside them, which the lockfile and a deploy's install read.
 */
export function planInit(cwd: string, tgz: string, dir: string, policies?: string): InitPlan {
  const { manifest, shrinkwrap, integrity } = readKitTarball(tgz);
  const file = basename(tgz);
  const kit: KitTarball = { manifest, shrinkwrap, file, integrity };
  const pkgFile = join(dir, "package.json");
  const previousText = read(resolve(cwd, pkgFile));
  const previous = previousText === null ? undefined : (JSON.parse(previousText) as Record<string, unknown>);
  const previousSpec = (previous?.dependencies as Record<string, string> | undefined)?.[KIT_PACKAGE];
  if (previous && !previousSpec) throw new SetupError(`${pkgFile} exists and is not a codebase of the ${KIT_PACKAGE} kit: name another folder with --dir.`);
  const name = typeof previous?.name === "string" ? previous.name : `${basename(resolve(cwd, dir))}-kit`;
  const previousVersion = previousSpec ? (/-(\d+\.\d+\.\d+[^/]*)\.tgz$/.exec(previousSpec)?.[1] ?? previousSpec) : null;
  const pkg = codebasePackageJson(kit, name, previous);
  const changes = [
    ...changeOf(cwd, pkgFile, pkg),
    ...changeOf(cwd, join(dir, "package-lock.json"), codebaseLockfile(kit, name, codebaseDependencies(kit))),
    ...(existsSync(resolve(cwd, dir, "index.js")) ? [] : changeOf(cwd, join(dir, "index.js"), codebaseIndex(manifest))),
    ...(existsSync(resolve(cwd, dir, ".gitignore")) ? [] : changeOf(cwd, join(dir, ".gitignore"), CODEBASE_GITIGNORE)),
  ];
  // A new codebase gets the first instance's registry (functions:kits:install names it after the folder), so that the
  // kit loads as soon as firebase-tools installs it; `retention setup` keeps every instance's current from then on.
  if (previous === undefined && policies !== undefined && existsSync(resolve(cwd, policies))) {
    const firebaseText = read(join(cwd, "firebase.json"));
    const rules = firebaseText === null ? undefined : firestoreFilesFor(readJsonc("firebase.json", firebaseText), "(default)")?.rules;
    const bundle = bundleOf(cwd, policies, rules === undefined ? null : read(resolve(cwd, rules)));
    changes.push(...changeOf(cwd, join(dir, instanceBundleFile(basename(resolve(cwd, dir)))), bundleText(bundle)));
  }
  const here = existsSync(resolve(cwd, dir)) ? readdirSync(resolve(cwd, dir)) : [];
  const stale = here.filter((f) => f !== file && f.startsWith(`${KIT_PACKAGE}-`) && f.endsWith(".tgz")).map((f) => join(dir, f));
  return { dir, kit, previousVersion, changes, stale, tarball: tgz };
}

/**
 * Applies an init plan: the files, the tarball copied in (older versions' removed), and for the emulators an evidence
 * key in the codebase's .secret.local when it has none (firebase-tools' Functions emulator reads the kit's secret
 * from there; the file is git-ignored and, with setup's ignore list, never deployed). NODE_ENV=production writes no key.
 */
export function applyInit(cwd: string, plan: InitPlan): { keyWritten: boolean } {
  applyChanges(cwd, plan.changes);
  const target = resolve(cwd, plan.dir, plan.kit.file);
  if (resolve(plan.tarball) !== target) copyFileSync(plan.tarball, target);
  for (const f of plan.stale) rmSync(resolve(cwd, f), { force: true });
  const secretFile = resolve(cwd, plan.dir, ".secret.local");
  const key = SECRETS.evidenceKey.env;
  const secrets = read(secretFile);
  if (process.env.NODE_ENV === "production") return { keyWritten: false };
  const has = (text: string | null, name: string) => text !== null && new RegExp(`^${name}=\\S{32,}`, "m").test(text);
  let text = secrets ?? "# Emulator-only secrets of the kit (git-ignored; never deployed). Production keys live in Secret Manager.\n";
  const keyWritten = !has(secrets, key);
  if (keyWritten) text = setEnvLine(text, key, randomBytes(32).toString("hex"));
  // The archive's local root key (platform/kms.ts): the emulators' stand-in for Cloud KMS reads it from here.
  if (!has(secrets, ARCHIVE_KEK_SECRET)) text = setEnvLine(text, ARCHIVE_KEK_SECRET, randomBytes(32).toString("hex"));
  if (text !== secrets) writeFileSync(secretFile, text, { mode: 0o600 });
  return { keyWritten };
}

// ---------------------------------------------------------------------------------------------------------------
// retention setup: what a kit cannot ship, written into the project

export interface SetupOptions {
  cwd: string;
  project?: string;
  instance?: string;
  /** The app's policies folder (versions/ and published.lock.json), relative to cwd. */
  policies: string;
  /** A Hosting site to serve the console on. */
  consoleSite?: string;
  location?: string;
}

export interface SetupPlan {
  project: string;
  stanza: KitStanza;
  instance: string;
  registryVersion: string;
  governedDatabase: string;
  changes: FileChange[];
  commands: string;
}

function projectId(cwd: string, given: string | undefined): string {
  if (given) return given;
  const rc = read(join(cwd, ".firebaserc"));
  const id = rc === null ? undefined : (readJsonc(".firebaserc", rc).projects as Record<string, unknown> | undefined)?.default;
  if (typeof id !== "string" || id === "") throw new SetupError("No project: pass --project <id> (or give .firebaserc a default project).");
  return id;
}

/** Whether a kit stanza's codebase is this kit (its package.json depends on the kit's package). */
function isThisKit(cwd: string, stanza: KitStanza): boolean {
  const text = read(resolve(cwd, stanza.source, "package.json"));
  if (text === null) return false;
  const pkg = JSON.parse(text) as { name?: string; dependencies?: Record<string, string> };
  return pkg.name === KIT_PACKAGE || pkg.dependencies?.[KIT_PACKAGE] !== undefined;
}

function envOf(cwd: string, configDir: string, project: string): Record<string, string> {
  return instanceEnv([read(resolve(cwd, configDir, ".env")), read(resolve(cwd, configDir, `.env.${project}`))]);
}

const settingOf = (env: Record<string, string>, key: "databaseId" | "ledgerDatabaseId"): string => env[SETTINGS[key].env] || String(SETTINGS[key].default);

/** Where a kit instance's functions look for its registry bundle unless RETENTION_REGISTRY_FILE names another. */
export const instanceBundleFile = (instance: string): string => `registries/${instance}.json`;

const bundleText = (bundle: RegistryBundle): string => `${JSON.stringify(bundle, null, 2)}\n`;

/** The app's published registry from its policies folder, checked as `scripts/bundle-policies.ts` checks it. */
export function bundleOf(cwd: string, policies: string, rulesText: string | null): RegistryBundle {
  const dir = resolve(cwd, policies);
  const versionsDir = join(dir, "versions");
  if (!existsSync(versionsDir) || !existsSync(join(dir, "published.lock.json"))) {
    throw new SetupError(`${policies}/ holds no published registry (versions/ and published.lock.json): draft one with \`retention discover\`, review it and publish it (README, "Adopt it for your app").`);
  }
  const files = new Map(
    readdirSync(versionsDir)
      .filter((f) => f.endsWith(".json"))
      .sort()
      .map((f) => [f, readFileSync(join(versionsDir, f), "utf8")] as const),
  );
  const lock = JSON.parse(readFileSync(join(dir, "published.lock.json"), "utf8")) as LockEntry[];
  const inUse = new Map<string, string>();
  if (rulesText !== null) for (const c of collectionsInRules(rulesText)) inUse.set(c, "the rules file");
  const { errors, current } = checkRegistry({ files, lock, collectionsInUse: inUse });
  if (errors.length > 0 || !current) throw new SetupError(`${policies}/ does not hold together:\n  - ${errors.join("\n  - ")}`);
  return makeRegistryBundle(files, lock, current, `${policies}/`);
}

/**
 * Publishes `file` (in the policies folder's versions/): its hash appended to published.lock.json, after the whole
 * folder with the new lock passes the registry checks (a published version may never change afterwards; the next
 * change is a new version). What `scripts/bundle-policies.ts --publish` does in this repository, for a project that
 * has the kit instead. Returns the lock file's change.
 */
export function planPublish(cwd: string, policies: string, file: string): { version: string; change: FileChange } {
  const dir = resolve(cwd, policies);
  const lockFile = join(dir, "published.lock.json");
  const text = read(join(dir, "versions", file));
  if (text === null) throw new SetupError(`${policies}/versions/${file} does not exist.`);
  const lock = JSON.parse(read(lockFile) ?? "[]") as LockEntry[];
  if (lock.some((l) => l.file === file)) throw new SetupError(`${file} is already published; a published version never changes: publish a new version instead.`);
  const version = (JSON.parse(text) as { version?: unknown }).version;
  if (typeof version !== "string") throw new SetupError(`${policies}/versions/${file} names no version.`);
  const next = [...lock, { version, file, sha256: sha256Hex(text) }];
  const files = new Map(
    readdirSync(join(dir, "versions"))
      .filter((f) => f.endsWith(".json"))
      .sort()
      .map((f) => [f, readFileSync(join(dir, "versions", f), "utf8")] as const),
  );
  const { errors, current } = checkRegistry({ files, lock: next, collectionsInUse: new Map() });
  if (errors.length > 0 || current?.version !== version) throw new SetupError(`${file} cannot be published:\n  - ${errors.join("\n  - ") || `it would not be the current version`}`);
  return { version, change: { file: join(policies, "published.lock.json"), before: read(lockFile), after: `${JSON.stringify(next, null, 2)}\n` } };
}

/** The files setup creates for a governed database firebase.json has no entry for (named by its database id). */
export function newDatabaseFiles(database: string): { rules: string; indexes: string } {
  return { rules: `firestore.${database}.rules`, indexes: `firestore.${database}.indexes.json` };
}

/** A rules file for a database that had none: everything denied but what the retention block allows, the app's blocks to come below it. */
const newRulesFile = (database: string): string =>
  [
    "rules_version = '2';",
    "",
    `// Client access to database ${database}. \`retention setup\` created this file and keeps the part between the markers;`,
    "// the app's own match blocks go below them. Anything no block allows is denied.",
    "service cloud.firestore {",
    "  match /databases/{database}/documents {",
    `    ${RULES_BEGIN}`,
    `    ${RULES_END}`,
    "  }",
    "}",
    "",
  ].join("\n");

/** The rules file's change: its retention block as `registry` has it (a new file when there is none). */
function rulesChange(cwd: string, file: string, registry: Registry, database: string): FileChange[] {
  const before = read(resolve(cwd, file));
  try {
    return changeOf(cwd, file, spliceRetentionRules(before ?? newRulesFile(database), generateRetentionRules(registry), file));
  } catch (err) {
    throw new SetupError((err as Error).message);
  }
}

/** The index file's change: the indexes and TTL policies one database's view of the registry needs. */
function indexesChange(cwd: string, file: string, view: PolicyIndex, database: string): FileChange[] {
  const text = read(resolve(cwd, file)) ?? '{\n  "indexes": [],\n  "fieldOverrides": []\n}\n';
  try {
    return changeOf(cwd, file, spliceIndexFile(text, view, file, database).after);
  } catch (err) {
    if (err instanceof IndexFileError) throw new SetupError(err.message);
    throw err;
  }
}

/** firebase.json with a firestore entry for one more database (a single entry becomes a list of them). */
function withFirestoreEntry(text: string, entry: { database: string; rules: string; indexes: string }): string {
  const f = readJsonc("firebase.json", text).firestore;
  if (Array.isArray(f)) return applyEdits(text, modify(text, ["firestore", f.length], entry, { ...FORMAT, isArrayInsertion: true }));
  const first = f && typeof f === "object" ? [{ database: "(default)", ...(f as Record<string, unknown>) }] : [];
  return applyEdits(text, modify(text, ["firestore"], [...first, entry], FORMAT));
}

/**
 * What setup would write for one instance of the kit, and the commands it leaves to the operator. Reads only.
 * - the registry bundle, into the kit's codebase (`registries/<instance>.json`), named by RETENTION_REGISTRY_FILE in
 *   the instance's `.env`;
 * - the emulators' settings of the instance (`.env.local`: App Check off, as the project's own emulators run);
 * - the retention part of the governed database's rules and indexes files (TTL policies included), between markers;
 * - the kit stanza's ignore list; with a console site, the Hosting entry that serves the console for the instance.
 * Refuses (SetupError) where an instance would share a database with another, or a file cannot be written safely.
 */
export function planSetup(o: SetupOptions): SetupPlan {
  const { cwd } = o;
  const firebaseText = read(join(cwd, "firebase.json"));
  if (firebaseText === null) throw new SetupError("No firebase.json here: run setup in your Firebase project's folder.");
  const firebaseJson = readJsonc("firebase.json", firebaseText);
  const project = projectId(cwd, o.project);
  const stanzas = kitStanzas(firebaseJson).filter((s) => isThisKit(cwd, s));
  if (stanzas.length === 0) {
    throw new SetupError(`firebase.json installs no ${KIT_PACKAGE} kit: write its codebase with \`retention init\`, then run \`npx firebase-tools@15 functions:kits:install --directory <codebase>\`.`);
  }
  const all = stanzas.flatMap((s) => Object.keys(s.instances).map((instance) => ({ stanza: s, instance })));
  const chosen = o.instance === undefined ? (all.length === 1 ? all[0] : undefined) : all.find((a) => a.instance === o.instance);
  if (!chosen) {
    throw new SetupError(o.instance === undefined ? `Several instances of the kit: name one with --instance (${all.map((a) => a.instance).join(", ")}).` : `No instance ${o.instance}: the kit's instances are ${all.map((a) => a.instance).join(", ")}.`);
  }
  const { stanza, instance } = chosen;
  const configDir = stanza.instances[instance]!;
  const env = envOf(cwd, configDir, project);
  const governedDatabase = settingOf(env, "databaseId");

  const targets = firestoreFilesFor(firebaseJson, governedDatabase);
  if (!targets?.rules || !targets.indexes) {
    throw new SetupError(`firebase.json has no firestore entry with rules and indexes for database ${governedDatabase}, which instance ${instance} governs: add one (e.g. "firestore": { "rules": "firestore.rules", "indexes": "firestore.indexes.json" }).`);
  }
  const rulesText = read(resolve(cwd, targets.rules));
  const bundle = bundleOf(cwd, o.policies, rulesText);
  const registry = bundle.current;
  // Each instance governs its primary and the registry's other databases, as its RETENTION_DATABASES maps them.
  const cells = new PolicyIndex(registry).cells().filter((c) => c !== PRIMARY_CELL);
  const collisions = databaseCollisions(
    all.map((a) => {
      const e = envOf(cwd, a.stanza.instances[a.instance]!, project);
      const map = parseDatabaseMap(e[SETTINGS.databases.env] ?? "");
      return { instance: a.instance, governed: [settingOf(e, "databaseId"), ...cells.map((c) => map.get(c) ?? c)], ledger: settingOf(e, "ledgerDatabaseId") };
    }),
  );
  if (collisions.length > 0) throw new SetupError(`The kit's instances would share data: ${collisions.join("; ")}.`);
  const buckets = bucketCollisions(
    all.map((a) => {
      const own = envOf(cwd, a.stanza.instances[a.instance]!, project)[SETTINGS.storageBucket.env] || String(SETTINGS.storageBucket.default);
      const defaultBucket = own === DEFAULT_BUCKET ? `${project}'s default bucket` : own;
      return { instance: a.instance, buckets: new PolicyIndex(registry).allStorageEntries().map((e) => resolveBucket(e.bucket, { projectId: project, defaultBucket })) };
    }),
  );
  if (buckets.length > 0) throw new SetupError(`The kit's instances would share data: ${buckets.join("; ")}.`);
  const changes: FileChange[] = [];

  // The registry, where the instance's functions read it: the file its RETENTION_REGISTRY_FILE names, else its own
  // registries/<instance>.json (relative to the codebase folder; platform/registry.ts).
  const bundleFile = env[REGISTRY_FILE.env] || instanceBundleFile(instance);
  changes.push(...changeOf(cwd, join(stanza.source, bundleFile), bundleText(bundle)));
  let envLocal = read(resolve(cwd, configDir, ".env.local")) ?? "";
  for (const s of Object.values(SETTINGS) as SettingSpec[]) if (s.emulator !== undefined) envLocal = setEnvLine(envLocal, s.env, String(s.emulator));
  changes.push(...changeOf(cwd, join(configDir, ".env.local"), envLocal));

  // Rules and indexes of every governed database: the primary's files, then each other database's, which firebase.json
  // gets an entry (and the project the two files) for when it has none yet.
  let fj = firebaseText;
  const map = parseDatabaseMap(env[SETTINGS.databases.env] ?? "");
  const index = new PolicyIndex(registry);
  for (const cell of [PRIMARY_CELL, ...cells]) {
    const database = cell === PRIMARY_CELL ? governedDatabase : (map.get(cell) ?? cell);
    const files = cell === PRIMARY_CELL ? targets : firestoreFilesFor(firebaseJson, database);
    if (files && (!files.rules || !files.indexes)) {
      throw new SetupError(`firebase.json's firestore entry for database ${database} (the registry's ${cell} database) lacks ${files.rules ? '"indexes"' : '"rules"'}: give it both files, then run setup again.`);
    }
    const { rules, indexes } = files ? { rules: files.rules!, indexes: files.indexes! } : newDatabaseFiles(database);
    if (!files) fj = withFirestoreEntry(fj, { database, rules, indexes });
    changes.push(...rulesChange(cwd, rules, registry, database), ...indexesChange(cwd, indexes, index.forCell(cell), database));
  }

  // firebase.json: the codebase's ignore list, and the console's Hosting entry.
  const ignore = [...new Set([...(stanza.ignore ?? []), ...KIT_CODEBASE_IGNORE])];
  if (JSON.stringify(ignore) !== JSON.stringify(stanza.ignore ?? null)) fj = applyEdits(fj, modify(fj, ["functions", stanza.position, "ignore"], ignore, FORMAT));
  if (o.consoleSite !== undefined) {
    const entry = consoleHosting({ site: o.consoleSite, public: join(stanza.source, "node_modules", KIT_PACKAGE, "console"), functionIdPrefix: `kit-${instance}-`, region: "us-central1" });
    const hosting = firebaseJson.hosting;
    const list = Array.isArray(hosting) ? (hosting as Record<string, unknown>[]) : hosting && typeof hosting === "object" ? [hosting as Record<string, unknown>] : [];
    if (list.some((h) => h.site === undefined && h.target === undefined)) {
      throw new SetupError(`firebase.json's hosting entry has no "site" (or "target"): with the console's site beside it, every entry needs one. Add "site": "<your site>" to it and run setup again.`);
    }
    const at = list.findIndex((h) => h.site === o.consoleSite);
    if (Array.isArray(hosting)) fj = applyEdits(fj, modify(fj, ["hosting", at >= 0 ? at : list.length], entry, { ...FORMAT, isArrayInsertion: at < 0 }));
    else fj = applyEdits(fj, modify(fj, ["hosting"], [...list, entry], FORMAT));
  }
  changes.push(...changeOf(cwd, "firebase.json", fj));

  const commands = runOnceCommands({
    project,
    instance,
    ledgerDatabase: settingOf(env, "ledgerDatabaseId"),
    ...(o.location ? { location: o.location } : {}),
    anchorBucket: `${project}-retention-anchors`,
  });
  return { project, stanza, instance, registryVersion: registry.version, governedDatabase, changes, commands };
}

/** A change's file named from the project folder. */
export const shown = (cwd: string, file: string): string => relative(cwd, resolve(cwd, file)) || file;
