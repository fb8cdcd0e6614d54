// The social example's own emulator run (`npm run test:social`): its demo project, whose functions enforce its
// registry (functions/.env.demo-social). Without it, a suite would run against AtlasMart's functions and fail in
// ways that say nothing; this says why at once.
import { isSocialRegistry } from "../../examples/social/registry";
import { registryPolicy } from "../../functions/src/platform/registry";

if (process.env.GCLOUD_PROJECT !== "demo-social" || !isSocialRegistry(registryPolicy().registry)) {
  throw new Error(
    "The social example's suites run on its own emulator project: `npm run test:social` " +
      "(node scripts/emulators.mjs exec --example social --only firestore,auth,functions,tasks,hosting -- vitest run --project social) after `npm run build`.",
  );
}
