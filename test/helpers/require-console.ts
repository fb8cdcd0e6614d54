// The browser suite drives the console on the Hosting emulator; without it the suite fails at once and says why.
if (!process.env.CONSOLE_ORIGIN || !process.env.FUNCTIONS_EMULATOR_ORIGIN) {
  throw new Error(
    "The console suite needs the Hosting, Functions, Auth and Firestore emulators: run it through `npm run test:browser` " +
      "(node scripts/emulators.mjs exec --only firestore,auth,functions,tasks,hosting -- vitest run --project browser) after `npm run build`.",
  );
}
