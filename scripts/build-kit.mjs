#!/usr/bin/env node
// Builds the function kit (packages/kit, the `firestore-retention` package) from the functions' own sources:
//
//   node scripts/build-kit.mjs          (`npm run build:kit`; `npm pack ./packages/kit` runs it as prepack)
//
// 1. lib/: functions/src compiled with declarations (packages/kit/tsconfig.json), the kit's entry in lib/kit/. The
//    project's own function list and the built-in registry stay out: a kit ships no app's registry.
// 2. console/: the compliance console's static build (console/dist, from `npm run build`), for the Hosting site
//    `retention setup` points at it.
// 3. npm-shrinkwrap.json: the kit's dependencies as the tests ran them (scripts/kit-lockfile.mjs).
// Then it checks what it built: the entry and its lib export exist, no registry bundle came along, and the package's
// dependencies are the functions' (firebase-functions as a peer).
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { subsetLockfile } from "./kit-lockfile.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const kit = join(root, "packages", "kit");
const readJson = (file) => JSON.parse(readFileSync(file, "utf8"));
const fail = (message) => {
  process.stderr.write(`[build-kit] ${message}\n`);
  process.exit(1);
};

const pkg = readJson(join(kit, "package.json"));
const functionsPkg = readJson(join(root, "functions", "package.json"));

// The kit's dependencies are the functions' own, at the same versions, with firebase-functions as a peer (a function
// kit names it as a dependency or a peer; a peer makes the adopting codebase and the kit share one copy).
const expected = { ...functionsPkg.dependencies };
delete expected["firebase-functions"];
const differs = (a, b) => JSON.stringify(Object.entries(a).sort()) !== JSON.stringify(Object.entries(b).sort());
if (differs(pkg.dependencies ?? {}, expected)) fail(`packages/kit/package.json dependencies must be functions/package.json's without firebase-functions: ${JSON.stringify(expected)}`);
if (differs(pkg.peerDependencies ?? {}, { "firebase-functions": functionsPkg.dependencies["firebase-functions"] })) {
  fail(`packages/kit/package.json must name firebase-functions@${functionsPkg.dependencies["firebase-functions"]} as its only peer dependency`);
}

const started = Date.now();
for (const d of ["lib", "console"]) rmSync(join(kit, d), { recursive: true, force: true });
execFileSync(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", join(kit, "tsconfig.json")], { stdio: "inherit" });

const consoleDist = join(root, "console", "dist");
if (!existsSync(join(consoleDist, "index.html"))) fail("console/dist/index.html is missing: run `npm run build` first (it builds the console).");
cpSync(consoleDist, join(kit, "console"), { recursive: true });

const lock = readJson(join(root, "package-lock.json"));
const shrinkwrap = subsetLockfile(lock, {
  from: "functions",
  root: { name: pkg.name, version: pkg.version, license: pkg.license, dependencies: pkg.dependencies, peerDependencies: pkg.peerDependencies, bin: pkg.bin, engines: pkg.engines },
});
writeFileSync(join(kit, "npm-shrinkwrap.json"), `${JSON.stringify(shrinkwrap, null, 2)}\n`);

for (const file of ["lib/kit/index.js", "lib/kit/index.d.ts", "lib/kit/lib.js", "lib/kit/lib.d.ts", "lib/cli/main.js"]) {
  if (!existsSync(join(kit, file))) fail(`${file} was not built`);
}
const walk = (dir) => readdirSync(dir).flatMap((f) => (statSync(join(dir, f)).isDirectory() ? walk(join(dir, f)) : [join(dir, f)]));
const registries = walk(join(kit, "lib")).filter((f) => f.endsWith(".json"));
if (registries.length > 0) fail(`a kit ships no registry, but lib/ holds ${registries.map((f) => relative(kit, f)).join(", ")}`);

process.stderr.write(
  `[build-kit] ${pkg.name}@${pkg.version}: lib/ (${walk(join(kit, "lib")).length} files), console/, npm-shrinkwrap.json (${Object.keys(shrinkwrap.packages).length - 1} packages) in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
);
