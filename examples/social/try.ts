// Seeds the social example into the emulators and prints the deletion plan for one of its users (u-ana unless
// another uid is given): what her erasure would delete, and what it keeps and why. Read-only past the seed.
//
//   node scripts/emulators.mjs exec --only firestore,auth,storage -- npx tsx examples/social/try.ts [uid]
import { planSubject } from "../../functions/src/plan/index";
import { SOCIAL_DATABASE } from "./registry";
import { NO_SCOPE, seedSocial, useSocialRegistry } from "./seed";

async function main(): Promise<void> {
  if (!process.env.FIRESTORE_EMULATOR_HOST) throw new Error("FIRESTORE_EMULATOR_HOST is not set: run under scripts/emulators.mjs (see examples/social/README.md)");
  process.env.RETENTION_DATABASE_ID ??= SOCIAL_DATABASE;
  const uid = process.argv[2] ?? "u-ana";
  useSocialRegistry();
  const nowMs = Date.now();
  const seeded = await seedSocial({ nowMs, withObjects: true });
  console.log(`seeded ${seeded.documents} documents, ${seeded.objects} objects and ${seeded.users} Auth users into database ${process.env.RETENTION_DATABASE_ID}`);
  const plan = await planSubject({ type: "user", uid, tenantId: NO_SCOPE }, nowMs);
  console.log(JSON.stringify({ delete: plan.delete, retain: plan.retain, objects: plan.objects, policyVersion: plan.policyVersion, manifestHash: plan.manifestHash }, null, 2));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
