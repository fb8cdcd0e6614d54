// Seeds an example app into the emulators: its documents (through the engine's governed write path), its Auth
// users and, with --scenario, the deletion requests an officer meets. Seeding is each example's own job
// (examples/<name>/seed.ts), not the product CLI's. Emulators only: it creates users with a published password.
//
//   npm run seed -- atlasmart [--scenario] [--objects] [--no-auth] [--json]
//   npm run seed -- social [--scenario] [--objects] [--no-auth] [--json]
//
// --objects also uploads the example's Cloud Storage objects to the default bucket (the Storage emulator): AtlasMart's
// tenant files and customers' uploads, the social app's avatars and uploads. The harness passes it when Storage runs.
//
// The social example is seeded under its own registry: the one the emulators' project enforces when that is the
// example's (`npm run start:social`: functions/.env.demo-social), else through the engine's test seam, into a
// database of its own (examples/social/registry.ts#SOCIAL_DATABASE) so that it never mixes with AtlasMart's data.
// Exit: 0 seeded, 2 usage or a failure.
import { parseArgs } from "node:util";

const USAGE = "usage: npm run seed -- <atlasmart|social> [--scenario] [--objects] [--no-auth] [--json]";

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { scenario: { type: "boolean" }, objects: { type: "boolean" }, "no-auth": { type: "boolean" }, json: { type: "boolean" }, help: { type: "boolean" } } });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const example = positionals[0];
  if (positionals.length !== 1 || (example !== "atlasmart" && example !== "social")) throw new UsageError(USAGE);
  if (!process.env.FIRESTORE_EMULATOR_HOST) throw new UsageError("the seed runs on the emulators only (set FIRESTORE_EMULATOR_HOST, or run it under scripts/emulators.mjs).");
  const withAuth = values["no-auth"] !== true;
  if (values.scenario && !withAuth) throw new UsageError("--scenario needs Auth: leave out --no-auth.");
  if (withAuth && !process.env.FIREBASE_AUTH_EMULATOR_HOST) throw new UsageError("FIREBASE_AUTH_EMULATOR_HOST is not set: start the Auth emulator too, or pass --no-auth.");
  const withObjects = values.objects === true;
  if (withObjects && !process.env.STORAGE_EMULATOR_HOST) throw new UsageError("--objects needs the Storage emulator (STORAGE_EMULATOR_HOST): run under scripts/emulators.mjs with storage.");
  const nowMs = Date.now();
  let result: Record<string, unknown>;
  // The engine and the examples load only once the usage is known to be good: a refusal is immediate.
  if (example === "atlasmart") {
    const { seedDemo, seedDemoObjects } = await import("../examples/atlasmart/seed");
    const { seedDemoScenario } = await import("../examples/atlasmart/scenario");
    const seeded = await seedDemo({ nowMs, withAuth });
    const objects = withObjects ? (await seedDemoObjects()).size : null;
    result = { ...seeded, ...(objects !== null ? { objects } : {}), ...(values.scenario ? { scenario: await seedDemoScenario({ nowMs }) } : {}) };
  } else {
    const { isSocialRegistry, SOCIAL_DATABASE } = await import("../examples/social/registry");
    const { seedSocial, seedSocialScenario, useSocialRegistry } = await import("../examples/social/seed");
    const { registryPolicy } = await import("../functions/src/platform/registry");
    if (!isSocialRegistry(registryPolicy().registry)) {
      process.env.RETENTION_DATABASE_ID ??= SOCIAL_DATABASE;
      useSocialRegistry();
    }
    const seeded = await seedSocial({ nowMs, withAuth, withObjects });
    result = { ...seeded, ...(values.scenario ? { scenario: await seedSocialScenario({ nowMs }) } : {}), database: process.env.RETENTION_DATABASE_ID || "(default)" };
  }
  if (values.json) process.stdout.write(`${JSON.stringify(result)}\n`);
  else process.stdout.write(`seeded ${example}: ${JSON.stringify(result)}\n`);
  return 0;
}

class UsageError extends Error {}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`seed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(2);
  },
);
