// Builds the client: one ES module with the contract bundled in (zod and firebase stay peer dependencies),
// and its type declarations (the contract's included), so an app needs nothing from this repository's source.
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, "dist");
rmSync(dist, { recursive: true, force: true });
mkdirSync(dist, { recursive: true });
await build({
  entryPoints: [join(here, "src", "index.ts")],
  bundle: true,
  format: "esm",
  platform: "neutral",
  target: "es2022",
  outfile: join(dist, "index.js"),
  external: ["firebase", "firebase/*", "zod"],
  logLevel: "warning",
});
execFileSync(process.execPath, [join(here, "..", "..", "node_modules", "typescript", "bin", "tsc"), "-p", join(here, "tsconfig.json")], { stdio: "inherit" });
writeFileSync(join(dist, "index.d.ts"), 'export * from "./types/packages/client/src/index";\n');
