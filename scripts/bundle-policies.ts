// Validates the policy registry and bundles the current published version into the functions build
// (`firebase deploy` uploads only functions/). `--check` validates without writing; `--publish FILE`
// records a new version's hash in the lock file (a published version may never change afterwards).
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { sha256Hex } from "../functions/src/kernel/canonical";
import { checkRegistry, collectionsInRules, type LockEntry } from "../functions/src/kernel/registry-check";
import { retentionFingerprints } from "../functions/src/kernel/policy-fingerprint";
import { RegistrySchema } from "../functions/src/kernel/policy-schema";
import { demoCollectionIds } from "../functions/src/demo/atlasmart";

const root = resolve(import.meta.dirname, "..");
const versionsDir = join(root, "policies", "versions");
const lockPath = join(root, "policies", "published.lock.json");

const files = new Map(
  readdirSync(versionsDir)
    .filter((f) => f.endsWith(".json"))
    .sort()
    .map((f) => [f, readFileSync(join(versionsDir, f), "utf8")] as const),
);
let lock = JSON.parse(readFileSync(lockPath, "utf8")) as LockEntry[];

const args = process.argv.slice(2);
const publishIdx = args.indexOf("--publish");
if (publishIdx >= 0) {
  const file = args[publishIdx + 1];
  const text = file ? files.get(file) : undefined;
  if (!file || text === undefined) {
    console.error(`--publish needs a file in policies/versions/ (got ${file ?? "nothing"})`);
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
for (const c of collectionsInRules(readFileSync(join(root, "firestore.rules"), "utf8"))) collectionsInUse.set(c, "firestore.rules");
for (const c of demoCollectionIds()) collectionsInUse.set(c, "the AtlasMart demo schema");

const { errors, current } = checkRegistry({ files, lock, collectionsInUse });
if (errors.length > 0 || !current) {
  console.error("Policy registry check failed:");
  for (const e of errors) console.error(`  - ${e}`);
  process.exit(1);
}
if (!args.includes("--check")) {
  const outDir = join(root, "functions", "src", "generated");
  mkdirSync(outDir, { recursive: true });
  // Each published version's retention fingerprints, so the audit can tell a document stamped with an older
  // version whose retention did not change (not stale) from one whose retention did.
  const published = lock.map(({ version, sha256, file }) => ({ version, sha256, retention: retentionFingerprints(RegistrySchema.parse(JSON.parse(files.get(file)!))) }));
  const bundle = { current, published };
  writeFileSync(join(outDir, "registry.json"), `${JSON.stringify(bundle, null, 2)}\n`);
}
console.log(`policy registry ok: current ${current.version}, ${lock.length} published version(s)`);
