// The check that the engine knows no example app's schema: no collection name, path or field that an example's
// registry uses appears anywhere in functions/src (the examples' own code lives in examples/). Run by
// test/unit/scripts/engine-names.test.ts.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import type { Registry } from "../functions/src/kernel/policy-schema";

/**
 * The product's own vocabulary, which an example may use too: the user's key, the field every governed document
 * carries its scope in (and the callables' name for it), and the planDeletion input naming a user.
 */
export const ENGINE_WORDS: ReadonlySet<string> = new Set(["uid", "tenantId", "subjectUid", "createdAt"]);

/** The collection ids and fields an example's registry names: its schema, which the engine must not know. */
export function schemaNames(registry: Registry): Set<string> {
  const names = new Set<string>();
  const collections = (path: string | undefined) => (path ?? "").split("/").forEach((seg, i) => i % 2 === 0 && seg && !seg.startsWith("{") && names.add(seg));
  for (const c of registry.collections) collections(c.pattern);
  for (const e of [...registry.dataMap.user, ...(registry.dataMap.tenant ?? [])]) {
    collections(e.path);
    collections(e.collection);
    if (e.collectionId) names.add(e.collectionId);
    for (const [field] of e.where) names.add(field);
    for (const f of e.maskFields ?? []) names.add(f);
    if (e.arrayField) names.add(e.arrayField);
  }
  for (const l of registry.subjects?.user.scopeLookups ?? []) {
    if (l.via === "document") collections(l.path);
    if (l.via === "membership" || l.via === "array") collections(l.collection);
    for (const f of [l.via === "document" ? l.field : null, l.via === "membership" ? l.userField : null, l.via === "membership" ? l.scopeField : null, l.via === "array" ? l.field : null, l.via === "claim" ? l.claim : null]) {
      if (f) names.add(f);
    }
  }
  if (registry.subjects?.scope) collections(registry.subjects.scope.record);
  for (const r of registry.subtreeHoldRoots) collections(r);
  for (const w of ENGINE_WORDS) names.delete(w);
  return names;
}

/** A name as code or prose would carry it: quoted, or a segment of a path (`/name/`, `name/{`). */
const asToken = (name: string): RegExp => new RegExp(`(["'\`/])${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(["'\`/.]|$)`, "m");

export interface NameHit {
  file: string;
  line: number;
  name: string;
  text: string;
}

/** Every line of `files` (path -> text) that names one of `names`. */
export function namesIn(files: ReadonlyMap<string, string>, names: Iterable<string>): NameHit[] {
  const patterns = [...names].sort().map((n) => [n, asToken(n)] as const);
  const hits: NameHit[] = [];
  for (const [file, text] of files) {
    text.split("\n").forEach((line, i) => {
      for (const [name, re] of patterns) if (re.test(line)) hits.push({ file, line: i + 1, name, text: line.trim() });
    });
  }
  return hits;
}

/** The engine's sources: every functions/src/**.ts but the build's generated files. */
export function engineSources(root: string): Map<string, string> {
  const src = join(root, "functions", "src");
  const out = new Map<string, string>();
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      const rel = relative(src, path);
      if (rel === "generated") continue;
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith(".ts")) out.set(relative(root, path), readFileSync(path, "utf8"));
    }
  };
  walk(src);
  return out;
}
