// Records the shape of every query the code under test sends, for the index coverage check (`npm run check:indexes`,
// scripts/index-check/). On only when the emulator harness runs with `--record-queries` (it sets RETENTION_QUERY_LOG).
import { createRequire } from "node:module";
import { join } from "node:path";

const dir = process.env.RETENTION_QUERY_LOG;
if (dir) {
  const load = createRequire(import.meta.url);
  const recorder = load("../../scripts/index-check/recorder.cjs") as {
    install(options: { functionsDir: string; dir: string; processKind: string }): void;
  };
  recorder.install({ functionsDir: join(import.meta.dirname, "..", "..", "functions"), dir, processKind: "vitest" });
}
