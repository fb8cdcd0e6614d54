import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PolicyIndex } from "../kernel/policy";
import { retentionFingerprints } from "../kernel/policy-fingerprint";
import { RegistrySchema, type Registry } from "../kernel/policy-schema";
import bundle from "../generated/registry.json";
import { currentCell } from "./firestore";

let index: PolicyIndex | undefined;
/** The published versions behind the enforced one, when a seam put another app's registry in force. */
let publishedOverride: PublishedVersion[] | undefined;

/** A published version as the audit compares against it: its name and its retention fingerprints. */
export interface PublishedVersion {
  version: string;
  retention: ReturnType<typeof retentionFingerprints>;
}

/**
 * Every published version of the registry in force, oldest first: the bundle's, or those the seam was given with
 * another app's registry (that app's history is not in this bundle).
 */
export function publishedVersions(): readonly PublishedVersion[] {
  return publishedOverride ?? bundle.published;
}

/** The current published registry version, bundled at build time and validated once on first use: all of it, every cell. */
export function registryPolicy(): PolicyIndex {
  index ??= new PolicyIndex(RegistrySchema.parse(bundle.current));
  return index;
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
 * `<dir>/versions/`), validated: for tools that work on another app's registry than the bundled one.
 */
export function publishedRegistryIn(dir: string): Registry {
  const lock = JSON.parse(readFileSync(join(dir, "published.lock.json"), "utf8")) as { file: string }[];
  const last = lock[lock.length - 1];
  if (!last) throw new Error(`${dir}/published.lock.json lists no published version`);
  return RegistrySchema.parse(JSON.parse(readFileSync(join(dir, "versions", last.file), "utf8")));
}

/**
 * Test seam: enforces `registry` in this process instead of the bundled version (undefined: the bundle again),
 * so a suite can try a class the published registry does not have yet. Validated as the bundle is. `published`:
 * the published versions of another app whose registry this is (the audit checks documents' versions against
 * them); without it, the bundle's.
 */
export function useRegistryForTests(registry: Registry | undefined, published?: readonly Registry[]): void {
  index = registry === undefined ? undefined : new PolicyIndex(RegistrySchema.parse(registry));
  publishedOverride = registry === undefined || published === undefined ? undefined : published.map((r) => ({ version: r.version, retention: retentionFingerprints(RegistrySchema.parse(r)) }));
}
