import { seedDemoScenario } from "../../demo/scenario";
import { seedDemo, seedDemoObjects } from "../../demo/seed";
import { EXIT, type Command } from "../command";
import { keyValues, writeJson, writeOut } from "../output";
import { UsageError } from "../target";

export const seedDemoCommand: Command = {
  name: "seed-demo",
  summary: "Seed the AtlasMart demo (fixed ids, idempotent) on the emulators",
  usage: "retention seed-demo [--json] [--no-auth] [--objects] [--scenario]",
  details: `Writes the AtlasMart demo documents (t-acme, u-1001, u-1002, o-1001, ...) with their retention fields,
and creates the demo's Auth users (two customers, two compliance officers, one retention-admin). Running it
again resets the demo documents and keeps their retention anchors. Emulators only: it creates users with a
published demo password, which must never happen in a real project.

With --scenario (npm start passes it) it also makes, through the product's own code, the deletion requests an
officer meets (one asked today, in its grace period; one whose grace is over; one erased but for what a litigation
hold keeps; one erased; a tenant's closure awaiting a second approval) and a purge run the mass-deletion brake
holds back (sixty expired events), each once: a second run changes nothing.

With --objects (npm start passes it) it also uploads the demo's Cloud Storage objects to the default bucket (the
Storage emulator): t-acme's files and each customer's uploads, which the data map erases with them.

Options:
  --no-auth   documents only; do not touch Auth
  --objects   also the demo's objects in the default bucket (needs the Storage emulator)
  --scenario  also the demo's deletion requests and a braked purge run (needs Auth)
  --json      machine-readable output

Exit: 0 seeded, 2 usage or connection error.`,
  options: { "no-auth": { type: "boolean" }, objects: { type: "boolean" }, scenario: { type: "boolean" } },
  positionals: [],
  needsFirestore: true,
  validate({ values, target }) {
    if (!target.emulator) throw new UsageError("seed-demo runs on the emulators only (set FIRESTORE_EMULATOR_HOST).");
    if (values.scenario === true && values["no-auth"] === true) throw new UsageError("--scenario needs Auth: leave out --no-auth.");
    if (values.objects === true && !process.env.STORAGE_EMULATOR_HOST) throw new UsageError("--objects needs the Storage emulator (STORAGE_EMULATOR_HOST): run under scripts/emulators.mjs with storage.");
    if (values["no-auth"] !== true && !target.authEmulator) {
      throw new UsageError("FIREBASE_AUTH_EMULATOR_HOST is not set: start the Auth emulator too, or pass --no-auth.");
    }
  },
  async run({ values, json }) {
    const withAuth = values["no-auth"] !== true;
    const nowMs = Date.now();
    const r = await seedDemo({ nowMs, withAuth });
    const objects = values.objects === true ? (await seedDemoObjects()).size : null;
    const scenario = values.scenario === true ? await seedDemoScenario({ nowMs }) : null;
    if (json) writeJson({ ...r, ...(objects !== null ? { objects } : {}), ...(scenario ? { scenario } : {}) });
    else
      writeOut(
        keyValues([
          ["documents", r.documents],
          ["auth users", r.users],
          ...(objects !== null ? ([["objects", objects]] as [string, number][]) : []),
          ...(scenario ? ([["deletion requests", scenario.requests], ["purge runs awaiting approval", scenario.brakeRunsWaiting]] as [string, number][]) : []),
        ]),
      );
    return EXIT.ok;
  },
};
