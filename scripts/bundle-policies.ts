// Validates an app's policy registry and bundles its current published version for the functions to enforce.
//
//   tsx scripts/bundle-policies.ts [--policies <dir>] [--rules <file>] [--out <file>] [--check] [--publish FILE]
//
// Without options it is the product's own registry (policies/, checked against firestore.rules and the AtlasMart
// demo's collections) bundled into the functions build (functions/src/generated/registry.json: the built-in
// registry, which `firebase deploy` uploads with the functions). `--policies <dir>` names another app's policies
// folder (its versions/ and published.lock.json), `--rules` its rules file and `--out` the bundle file to write: a
// functions codebase enforces that bundle when its RETENTION_REGISTRY_FILE names it (functions/.env.<project>;
// platform/registry.ts). `--check` validates without writing; `--publish FILE` records a new version's hash in the
// lock file (a published version may never change afterwards).
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { sha256Hex } from "../functions/src/kernel/canonical";
import { checkRegistry, collectionsInRules, type LockEntry } from "../functions/src/kernel/registry-check";
import { makeRegistryBundle } from "../functions/src/kernel/registry-bundle";
import { demoCollectionIds } from "../examples/atlasmart/data";

const root = resolve(import.meta.dirname, "..");
const args = process.argv.slice(2);
const option = (name: string): string | undefined => {
  const i = args.indexOf(name);
  if (i < 0) return undefined;
  const value = args[i + 1];
  if (!value || value.startsWith("--")) {
    console.error(`${name} needs a value`);
    process.exit(2);
  }
  return resolve(value);
};
const policiesDir = option("--policies") ?? join(root, "policies");
const product = policiesDir === join(root, "policies");
const rulesFile = option("--rules") ?? join(root, "firestore.rules");
// Another app's policies are bundled only where --out says (never over the built-in registry).
const outFile = option("--out") ?? (product ? join(root, "functions", "src", "generated", "registry.json") : null);
const versionsDir = join(policiesDir, "versions");
const lockPath = join(policiesDir, "published.lock.json");

const files = new Map(
  readdirSync(versionsDir)
    .filter((f) => f.endsWith(".json"))
    .sort()
    .map((f) => [f, readFileSync(join(versionsDir, f), "utf8")] as const),
);
let lock = JSON.parse(readFileSync(lockPath, "utf8")) as LockEntry[];

const publishIdx = args.indexOf("--publish");
if (publishIdx >= 0) {
  const file = args[publishIdx + 1];
  const text = file ? files.get(file) : undefined;
  if (!file || text === undefined) {
    console.error(`--publish needs a file in ${relative(root, versionsDir)}/ (got ${file ?? "nothing"})`);
    process.exit(2);
  }
  if (lock.some((l) => l.file === file)) {
    console.error(`${file} is already published; publish a new version instead.`);
    process.exit(1);
  }
  const version = (JSON.parse(text) as { version: string }).version;
  lock = [...lock, { version, file, sha256: sha256Hex(text) }];
  writeFileSync(lockPath, `${JSON.stringify(lock, null, 2)}\n`);
  console.log(`published ${version} (${file})`);
}

const collectionsInUse = new Map<string, string>();
for (const c of collectionsInRules(readFileSync(rulesFile, "utf8"))) collectionsInUse.set(c, relative(root, rulesFile));
if (product) for (const c of demoCollectionIds()) collectionsInUse.set(c, "the AtlasMart demo schema");

const { errors, current } = checkRegistry({ files, lock, collectionsInUse });
if (errors.length > 0 || !current) {
  console.error("Policy registry check failed:");
  for (const e of errors) console.error(`  - ${e}`);
  process.exit(1);
}
const write = !args.includes("--check") && outFile !== null;
if (write) {
  // Each published version's retention fingerprints, so the audit can tell a document stamped with an older
  // version whose retention did not change (not stale) from one whose retention did; checked as the functions read it.
  const bundle = makeRegistryBundle(files, lock, current, relative(root, outFile));
  mkdirSync(dirname(outFile), { recursive: true });
  writeFileSync(outFile, `${JSON.stringify(bundle, null, 2)}\n`);
}
console.log(`policy registry ok (${relative(root, policiesDir)}): current ${current.version}, ${lock.length} published version(s)${write ? `, bundled into ${relative(root, outFile)}` : ""}`);
