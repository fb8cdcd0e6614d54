/**
 * The layering of functions/src (docs/ARCHITECTURE.md), enforced in `npm test` (`npm run check:layers`).
 * - kernel/ and every wing's rules (`<wing>/rules.ts`, `<wing>/rules/`) are pure: no Firebase, no I/O layer;
 * - a wing is used from outside only through its index.ts (its rules may be read directly: they are pure);
 * - platform/ (adapters) imports no wing; kernel/ imports nothing but kernel/;
 * - contract/ (the callable schemas, bundled by the console and the typed client) imports only zod, itself and
 *   kernel/, and reaches no Node built-in or Firebase package through them;
 * - the browser code (console/, packages/client/) takes from functions/src only what is built for the browser:
 *   contract/, kernel/, the bundled registry and the report's charts (audit/report/svg.ts), and reaches no Node
 *   built-in or Firebase server package through them;
 * - no import cycles.
 * `test/unit/scripts/layering.test.ts` runs these rules over a tree that breaks each of them and checks they catch it.
 */
const WINGS = "requests|holds|lifecycle|plan|ttl|backfill|audit|evidence|purge|export|discover|security-rules|cells|indexes|setup|shred|processors|erasure|restore|access";
const SRC = "^functions/src/";
const PURE = `${SRC}(kernel/|(${WINGS})/rules(\\.ts$|/))`;
/** Node's built-in modules (as dependency-cruiser names them: without `node:`), which no browser bundle has. */
/** The browser code: the console and the typed client (npm run check:layers cruises them with functions/src). */
const BROWSER = "^(console|packages/client)/src/";
/** A server package or Node built-in, which no browser bundle has. */
const SERVER_ONLY = () => `${NODE_BUILTINS}|(^|/)(node_modules/)?(firebase-admin|firebase-functions|@google-cloud)(/|$)`;
const NODE_BUILTINS = `^(${require("node:module")
  .builtinModules.filter((m) => !m.startsWith("_"))
  .map((m) => m.replace(/[/]/g, "\\/"))
  .join("|")})$`;

module.exports = {
  forbidden: [
    {
      name: "rules-are-pure",
      comment: "Rules take their data and clock as arguments: no Firebase or Google Cloud package, no adapter, no wing's service.",
      severity: "error",
      from: { path: PURE },
      to: { path: `(^|/)(node_modules/)?(firebase-admin|firebase-functions|firebase|@google-cloud)(/|$)|${SRC}(platform|entrypoints|cli|jobs|config|demo)/` },
    },
    {
      name: "rules-import-only-rules",
      comment: "A rule may use kernel/ and other wings' rules, never a wing's services or stores.",
      severity: "error",
      from: { path: PURE },
      to: { path: `${SRC}(${WINGS})/`, pathNot: `${SRC}(${WINGS})/rules(\\.ts$|/)` },
    },
    {
      name: "kernel-imports-only-kernel",
      severity: "error",
      from: { path: `${SRC}kernel/` },
      to: { path: `${SRC}`, pathNot: `${SRC}(kernel/|generated/)` },
    },
    {
      name: "wing-through-its-index",
      comment: "Another wing's internals (its store, its service, its runner) are reached through its index.ts only.",
      severity: "error",
      from: { path: `${SRC}([^/]+)/` },
      to: { path: `${SRC}(${WINGS})/`, pathNot: [`${SRC}$1/`, `${SRC}(${WINGS})/(index\\.ts$|rules(\\.ts$|/))`] },
    },
    {
      name: "platform-imports-no-wing",
      comment: "Adapters serve every wing and depend on none.",
      severity: "error",
      from: { path: `${SRC}platform/` },
      to: { path: `${SRC}(${WINGS}|entrypoints|cli|jobs)/` },
    },
    {
      name: "contract-is-pure",
      comment: "The callable contract runs in the browser too (console, typed client): zod, itself and the pure kernel only.",
      severity: "error",
      from: { path: `${SRC}contract/` },
      to: { pathNot: [`${SRC}(contract|kernel)/`, "(^|/)node_modules/zod/"] },
    },
    {
      name: "contract-reaches-no-node",
      comment: "Nothing the contract reaches (through kernel/) may be a Node built-in or a Firebase/Google Cloud package: the browser bundle has neither.",
      severity: "error",
      from: { path: `${SRC}contract/` },
      to: { reachable: true, path: SERVER_ONLY() },
    },
    {
      name: "browser-takes-browser-code",
      comment: "The console and the typed client bundle server source: the contract, the pure kernel, the registry and the report's charts only.",
      severity: "error",
      from: { path: BROWSER },
      to: { path: SRC, pathNot: `${SRC}(contract/|kernel/|generated/|audit/report/svg\\.ts$)` },
    },
    {
      name: "browser-reaches-no-node",
      comment: "Nothing the console or the typed client reaches in functions/src may be a Node built-in or a Firebase server package.",
      severity: "error",
      from: { path: BROWSER },
      to: { reachable: true, path: SERVER_ONLY() },
    },
    {
      name: "no-cycles",
      severity: "error",
      from: { path: SRC },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(^|/)functions/src/generated/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "functions/tsconfig.json" },
    moduleSystems: ["cjs", "es6"],
  },
};
