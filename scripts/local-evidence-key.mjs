#!/usr/bin/env node
// The emulators' evidence key (and the registries' processor keys): functions/.secret.local, which the Functions emulator reads for the
// RETENTION_EVIDENCE_KEY secret and the CLI and in-process tests read too (functions/src/platform/evidence-key.ts).
// `npm ci` runs this (the root `prepare` script), and so does scripts/emulators.mjs, so a plain
// `firebase emulators:start` or `emulators:exec` finds a key as well as the harness does.
//
//   node scripts/local-evidence-key.mjs
//
// Emulators only: the file is git-ignored and never deployed (firebase.json's functions ignore list), and outside
// the emulators the code never reads it (a deployed function gets the key from Secret Manager). An existing key is
// kept (a developer may have put their own in the file), as are the file's other lines. With NODE_ENV=production
// (an install for a deployment or a production machine) nothing is written.
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The emulator-only secrets this file holds: the evidence key, and the archive's local root key (platform/kms.ts). */
const KEYS = ["RETENTION_EVIDENCE_KEY", "RETENTION_ARCHIVE_KEK"];
const usable = (name) => new RegExp(`^${name}=\\S{32,}`, "m");

/**
 * Makes sure `<root>/functions/.secret.local` holds an evidence key and an archive root key. Returns what it did for
 * the evidence key: "kept" (a key was there), "created" (no file), "added" (a file without a usable key: the key
 * line is put in, the rest kept); `archive` says the same of the archive key.
 */
export function ensureLocalEvidenceKey(root) {
  const file = join(root, "functions", ".secret.local");
  const before = existsSync(file) ? readFileSync(file, "utf8") : null;
  let text = before ?? "";
  const outcome = {};
  for (const name of KEYS) {
    if (usable(name).test(text)) {
      outcome[name] = "kept";
      continue;
    }
    const rest = text.replace(new RegExp(`^${name}=.*\\n?`, "m"), "");
    const header =
      rest.length > 0
        ? rest.replace(/\n?$/, "\n")
        : "# Emulator-only secrets (git-ignored; written by scripts/local-evidence-key.mjs). Production keys live in Secret Manager and Cloud KMS.\n";
    text = `${header}${name}=${randomBytes(32).toString("hex")}\n`;
    outcome[name] = before === null ? "created" : "added";
  }
  if (text !== (before ?? "")) writeFileSync(file, text, { mode: 0o600 });
  ensureLocalEvidenceKey.archive = outcome.RETENTION_ARCHIVE_KEK;
  return outcome.RETENTION_EVIDENCE_KEY;
}

/**
 * The secret names of the processors every registry in the repository declares (`processors[].secret` in
 * policies/versions/*.json and examples/<app>/policies/versions/*.json): each webhook or topic processor signs with
 * its own key, which the Functions emulator must find in functions/.secret.local like the evidence key.
 */
export function processorSecretNames(root) {
  const dirs = [join(root, "policies", "versions")];
  const examples = join(root, "examples");
  if (existsSync(examples)) for (const app of readdirSync(examples)) dirs.push(join(examples, app, "policies", "versions"));
  const names = new Set();
  for (const dir of dirs.filter((d) => existsSync(d))) {
    for (const f of readdirSync(dir).filter((x) => x.endsWith(".json"))) {
      let processors;
      try {
        processors = JSON.parse(readFileSync(join(dir, f), "utf8")).processors;
      } catch {
        continue; // the registry check reports a broken version; the keys are not the place to
      }
      for (const p of Array.isArray(processors) ? processors : []) if (typeof p?.secret === "string" && /^RETENTION_PROCESSOR_[A-Z0-9_]+$/.test(p.secret)) names.add(p.secret);
    }
  }
  return [...names].sort();
}

/**
 * Makes sure functions/.secret.local holds a key (32 random bytes, hex) for every processor secret the registries
 * name, keeping any that is there already. Returns the names it wrote.
 */
export function ensureLocalProcessorKeys(root) {
  const names = processorSecretNames(root);
  const file = join(root, "functions", ".secret.local");
  let text = existsSync(file) ? readFileSync(file, "utf8") : "";
  const written = [];
  for (const name of names) {
    if (new RegExp(`^${name}=\\S{32,}`, "m").test(text)) continue;
    text = text.replace(new RegExp(`^${name}=.*\\n?`, "m"), "");
    text = `${text.replace(/\n?$/, "\n").replace(/^\n$/, "")}${name}=${randomBytes(32).toString("hex")}\n`;
    written.push(name);
  }
  if (written.length > 0) writeFileSync(file, text, { mode: 0o600 });
  return written;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
  if (process.env.NODE_ENV === "production") {
    process.stderr.write("[evidence-key] NODE_ENV=production: no emulator evidence key written (deployed functions use Secret Manager)\n");
  } else {
    if (ensureLocalEvidenceKey(root) !== "kept") process.stderr.write("[evidence-key] wrote a new evidence key to functions/.secret.local (emulators only)\n");
    const keys = ensureLocalProcessorKeys(root);
    if (keys.length > 0) process.stderr.write(`[evidence-key] wrote processor keys to functions/.secret.local (emulators only): ${keys.join(", ")}\n`);
    if (ensureLocalEvidenceKey.archive !== "kept") process.stderr.write("[evidence-key] wrote a new archive root key to functions/.secret.local (emulators only)\n");
  }
}
