"use strict";
/**
 * `node --require` preload for the index coverage check. scripts/emulators.mjs puts it in NODE_OPTIONS when it runs
 * with `--record-queries <label>`, so every Node process of that run loads it; it acts only in the processes that run
 * the product's code outside vitest (vitest's own workers use test/helpers/record-queries.ts):
 * - the Functions emulator's workers (firebase-tools spawns them with the harness's environment, NODE_OPTIONS included);
 * - the operator CLI (`bin/retention.js`, also through `npx retention`), which the CLI suite runs as a child process.
 * Everywhere else (the Firebase CLI, vitest, npx) it returns at once. Without RETENTION_QUERY_LOG it does nothing.
 */
const { join } = require("node:path");

const dir = process.env.RETENTION_QUERY_LOG;
const main = process.argv[1] || "";
const processKind = /functionsEmulatorRuntime(\.js)?$/.test(main)
  ? "functions-worker"
  : /(^|[\\/])retention(\.js)?$/.test(main)
    ? "cli"
    : null;

if (dir && processKind) {
  require("./recorder.cjs").install({ functionsDir: join(__dirname, "..", "..", "functions"), dir, processKind });
}
