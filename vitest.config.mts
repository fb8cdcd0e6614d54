import { defineConfig } from "vitest/config";

// Three kinds of test (STYLE.md): unit needs nothing; rules and integration need the emulators and
// run under `scripts/emulators.mjs`, which fails loudly when the emulator cannot start.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: ["test/unit/**/*.test.ts"],
        },
      },
      {
        test: {
          name: "emulator",
          include: ["test/rules/**/*.test.ts", "test/integration/**/*.test.ts"],
          setupFiles: ["test/helpers/require-emulators.ts"],
          testTimeout: 60_000,
          hookTimeout: 60_000,
          fileParallelism: false,
          sequence: { concurrent: false },
        },
      },
    ],
  },
});
