import { defineConfig } from "vitest/config";

// Three kinds of test: unit needs nothing; the emulator suites run under `scripts/emulators.mjs`,
// which fails loudly when an emulator cannot start. The emulator suites are split in two runs:
// - "emulator": rules and integration suites that drive the code in-process, on Firestore + Auth only. No
//   functions are loaded, so no delete trigger reacts to the data a suite writes or clears.
// - "functions": suites that need the deployed functions (callables over HTTP, the real TTL triggers, the
//   Cloud Tasks fan-out). They run against the full emulator set, on their own.
const FUNCTIONS_SUITES = [
  "test/integration/entrypoints/callable/**/*.test.ts",
  "test/integration/ttl/trigger.test.ts",
  "test/integration/purge/functions-emulator.test.ts",
];
// The social example on its own emulator project (demo-social, whose functions enforce its registry): its callables,
// its TTL trigger and the console walk, in one emulator run (`npm run test:social`).
const SOCIAL_SUITES = ["test/integration/examples/social-functions/**/*.test.ts", "test/e2e/social-console.test.ts"];

// The function kit adopted into a scratch project of its own (test/kit/): the suite starts that project's emulators
// itself (firebase-tools 15 for Functions, Auth and Tasks; 14.27 for Firestore; Storage in-process as the harness runs
// it), restarts them for the upgrade and the second instance, and stops them (`npm run test:kit`, 150 to 480 s).
const KIT_SUITES = ["test/kit/**/*.test.ts"];

const emulatorDefaults = {
  testTimeout: 60_000,
  hookTimeout: 60_000,
  fileParallelism: false,
  sequence: { concurrent: false },
};

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
          exclude: [...FUNCTIONS_SUITES, ...SOCIAL_SUITES],
          setupFiles: ["test/helpers/worker-project.ts", "test/helpers/require-emulators.ts", "test/helpers/fresh-storage.ts", "test/helpers/record-queries.ts"],
          ...emulatorDefaults,
          // Two files at a time, each worker on a project of its own (test/helpers/worker-project.ts): the suites are
          // mostly waiting on the emulator, and one at a time they took 17 of CI's 36 minutes.
          fileParallelism: true,
          maxWorkers: 2,
        },
      },
      {
        // The console in a real browser (playwright-core driving Debian's Chromium) on the Hosting emulator.
        test: {
          name: "browser",
          include: ["test/e2e/**/*.test.ts"],
          exclude: SOCIAL_SUITES,
          setupFiles: ["test/helpers/require-emulators.ts", "test/helpers/require-console.ts"],
          ...emulatorDefaults,
          testTimeout: 600_000,
        },
      },
      {
        test: {
          name: "functions",
          include: FUNCTIONS_SUITES,
          setupFiles: ["test/helpers/require-emulators.ts", "test/helpers/require-functions.ts", "test/helpers/record-queries.ts"],
          ...emulatorDefaults,
          // A hook that waits for triggers may wait out a new worker's 120 s load (test/integration/entrypoints/callable/support.ts).
          hookTimeout: 180_000,
        },
      },
      {
        test: {
          name: "kit",
          include: KIT_SUITES,
          ...emulatorDefaults,
          // The scratch project's: the suite's engine calls and the seed go to its emulators (test/helpers/kit.ts).
          env: { GCLOUD_PROJECT: "demo-kit-social", RETENTION_PROJECT_ID: "demo-kit-social" },
          testTimeout: 900_000,
          hookTimeout: 600_000,
        },
      },
      {
        test: {
          name: "social",
          include: SOCIAL_SUITES,
          setupFiles: ["test/helpers/require-emulators.ts", "test/helpers/require-functions.ts", "test/helpers/require-console.ts", "test/helpers/require-social.ts", "test/helpers/record-queries.ts"],
          ...emulatorDefaults,
          testTimeout: 600_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
});
