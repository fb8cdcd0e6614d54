// Suites of the "functions" project call deployed functions; without the Functions emulator they fail at once.
if (!process.env.FUNCTIONS_EMULATOR_ORIGIN || !process.env.CLOUD_TASKS_EMULATOR_HOST) {
  throw new Error(
    "This suite needs the Functions and Cloud Tasks emulators: run it through `npm run test:functions` " +
      "(or `node scripts/emulators.mjs exec -- vitest run --project functions`) after `npm run build`.",
  );
}
