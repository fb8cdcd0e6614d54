// Emulator-backed suites never skip quietly: without the emulators they fail at once and say why.
const missing = ["FIRESTORE_EMULATOR_HOST"].filter((name) => !process.env[name]);
if (missing.length > 0) {
  throw new Error(
    `Emulator-backed tests need the Firebase emulators (${missing.join(", ")} is unset). ` +
      "Run them through `npm test` or `node scripts/emulators.mjs exec --only firestore,auth -- vitest run --project emulator`; " +
      "that script finds the Firestore emulator jar and says what to install when it cannot.",
  );
}
