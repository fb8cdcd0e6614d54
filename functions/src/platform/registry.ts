import { existsSync, readFileSync } from "node:fs";
import { parse as parseDotenv } from "dotenv";
import { isAbsolute, join, resolve } from "node:path";
import { REGISTRY_FILE } from "../config/params";
import { PolicyIndex } from "../kernel/policy";
import { retentionFingerprints } from "../kernel/policy-fingerprint";
import { parseRegistryBundle, type RegistryBundle } from "../kernel/registry-bundle";
import { RegistrySchema, type Registry } from "../kernel/policy-schema";
import { KIT_INSTANCE_ENV, kitInstance } from "./function-ids";
import { settings } from "./settings";
import { currentCell } from "./firestore";

/**
 * The functions codebase directory (`functions/`): where firebase-tools reads the functions' dotenv files and where
 * a deployed function runs. From functions/src/platform (sources) and functions/lib/platform (the build) alike.
 */
export const CODEBASE_DIR = resolve(__dirname, "..", "..");

interface Enforced {
  index: PolicyIndex;
  published: PublishedVersion[];
  /** Where it came from: "built-in", a bundle file's path, or "test seam". */
  source: string;
}

let enforced: Enforced | undefined;

/**
 * Set by a function kit's entry ({@link enforceCodebaseRegistry}): the adopting project's codebase directory, whose
 * bundle the kit enforces. A kit has no built-in registry to fall back on.
 */
let kitCodebase: string | undefined;

/**
 * For a function kit: the registry is a bundle in `dir` (the codebase firebase-tools installed the kit as, which is the
 * working directory of discovery, of the emulated functions and of a deployed function), and nothing else: the one
 * RETENTION_REGISTRY_FILE names, else the instance's own, `registries/<instance>.json` (what `retention setup` writes).
 * Without one the functions do not load. Called by the kit's entry before any function is defined.
 */
export function enforceCodebaseRegistry(dir: string): void {
  kitCodebase = dir;
  enforced = undefined;
}

/**
 * The registry built into the functions (`policies/`, which `npm run build` bundles into src/generated/ and copies
 * next to the compiled code in lib/generated/). Read when first needed rather than imported, so that no build carries
 * it that does not put it there: the function kit's build does not, because a kit ships no app's registry.
 */
export const BUILT_IN_REGISTRY_FILE = join(__dirname, "..", "generated", "registry.json");

/** A published version as the audit compares against it: its name and its retention fingerprints. */
export interface PublishedVersion {
  version: string;
  retention: Record<string, string>;
}

/** One key's value in a dotenv file, as firebase-tools reads the functions' env files; undefined when absent. */
function dotenvValue(file: string, key: string): string | undefined {
  if (!existsSync(file)) return undefined;
  return parseDotenv(readFileSync(file, "utf8"))[key];
}

/**
 * The bundle file the environment names (REGISTRY_FILE), else the one the codebase's dotenv files name for this
 * project, in firebase-tools' order (`.env`, then `.env.<project>`, then `.env.local` on the emulators: a later file
 * wins). The files matter while firebase-tools lists the functions: it passes them no user environment then, and the
 * list (the TTL triggers) must be the one the deployed code enforces. Empty: the built-in registry.
 */
export function registryFileSetting(env: Readonly<Record<string, string | undefined>> = process.env, dir: string = CODEBASE_DIR, projectId: string = settings.projectId()): string {
  const fromEnv = env[REGISTRY_FILE.env];
  if (fromEnv !== undefined) return fromEnv;
  const files = [".env", `.env.${projectId}`, ...(env.FUNCTIONS_EMULATOR === "true" || env.FIRESTORE_EMULATOR_HOST ? [".env.local"] : [])];
  let value = "";
  for (const f of files) value = dotenvValue(join(dir, f), REGISTRY_FILE.env) ?? value;
  return value;
}

/** Reads and checks the bundle a setting names (relative to the functions codebase directory). */
export function readRegistryBundle(file: string, dir: string = CODEBASE_DIR): { bundle: RegistryBundle; path: string } {
  const path = isAbsolute(file) ? file : resolve(dir, file);
  if (!existsSync(path)) throw new Error(`${REGISTRY_FILE.env}=${file}: no registry bundle at ${path} (write it with \`retention setup\` in a project that installs the kit, or scripts/bundle-policies.ts --policies <dir> --out <file>)`);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    throw new Error(`${REGISTRY_FILE.env}=${file}: ${path} is not JSON: ${(err as Error).message}`);
  }
  return { bundle: parseRegistryBundle(raw, path), path };
}

function load(): Enforced {
  const dir = kitCodebase ?? CODEBASE_DIR;
  const file = registryFileSetting(process.env, dir);
  if (file === "") {
    if (kitCodebase !== undefined) {
      const instance = kitInstance();
      if (instance === null) throw new Error(`The kit runs outside a kit instance (no ${KIT_INSTANCE_ENV}) and ${REGISTRY_FILE.env} names no registry bundle: a kit has no registry of its own.`);
      const own = join("registries", `${instance}.json`);
      const { bundle, path } = readRegistryBundle(own, kitCodebase);
      return { index: new PolicyIndex(bundle.current), published: bundle.published, source: path };
    }
    const bundle = parseRegistryBundle(JSON.parse(readFileSync(BUILT_IN_REGISTRY_FILE, "utf8")), "built-in");
    return { index: new PolicyIndex(bundle.current), published: bundle.published, source: "built-in" };
  }
  const { bundle, path } = readRegistryBundle(file, dir);
  return { index: new PolicyIndex(bundle.current), published: bundle.published, source: path };
}

/**
 * Every published version of the registry in force, oldest first: the bundle's, or those the seam was given with
 * another app's registry.
 */
export function publishedVersions(): readonly PublishedVersion[] {
  enforced ??= load();
  return enforced.published;
}

/**
 * The registry version the functions enforce, all of it (every governed database): the bundle file REGISTRY_FILE
 * names ({@link registryFileSetting}), else the one built in. Read and validated once, when first used (the TTL
 * triggers use it while the code loads, so a bad bundle stops the functions loading rather than enforcing something
 * else).
 */
export function registryPolicy(): PolicyIndex {
  enforced ??= load();
  return enforced.index;
}

/** Where the enforced registry came from: "built-in", the bundle file's path, or "test seam". */
export function registrySource(): string {
  enforced ??= load();
  return enforced.source;
}

/**
 * The registry as the work in hand sees it: the part of the cell it runs in (`platform/firestore.ts#inCell`; the
 * primary outside any), so an engine written for one database plans, purges, audits and soft-deletes that
 * database's collections and data-map entries only (kernel/policy.ts#forCell). What spans cells (which cells a
 * subject reaches, where a scope hold goes) asks `registryPolicy()`.
 */
export function policy(): PolicyIndex {
  return registryPolicy().forCell(currentCell());
}

/**
 * The published version an app's policies folder enforces (`<dir>/published.lock.json`'s last entry, from
 * `<dir>/versions/`), validated: for tools that work on another app's registry than the enforced one.
 */
export function publishedRegistryIn(dir: string): Registry {
  const lock = JSON.parse(readFileSync(join(dir, "published.lock.json"), "utf8")) as { file: string }[];
  const last = lock[lock.length - 1];
  if (!last) throw new Error(`${dir}/published.lock.json lists no published version`);
  return RegistrySchema.parse(JSON.parse(readFileSync(join(dir, "versions", last.file), "utf8")));
}

/**
 * Test seam: enforces `registry` in this process instead of the configured one (undefined: the configured one
 * again, read afresh), so a suite can try a class the published registry does not have yet. Validated as a bundle
 * is. `published`: the published versions of another app whose registry this is (the audit checks documents'
 * versions against them); without it, the configured bundle's.
 */
export function useRegistryForTests(registry: Registry | undefined, published?: readonly Registry[]): void {
  if (registry === undefined) {
    enforced = undefined;
    return;
  }
  const index = new PolicyIndex(RegistrySchema.parse(registry));
  const versions = published === undefined ? publishedVersions() : published.map((r) => ({ version: r.version, retention: retentionFingerprints(RegistrySchema.parse(r)) }));
  enforced = { index, published: [...versions], source: "test seam" };
}
