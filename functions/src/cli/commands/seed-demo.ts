import { seedDemo } from "../../demo/seed";
import { EXIT, type Command } from "../command";
import { keyValues, writeJson, writeOut } from "../output";
import { UsageError } from "../target";

export const seedDemoCommand: Command = {
  name: "seed-demo",
  summary: "Seed the AtlasMart demo (fixed ids, idempotent) on the emulators",
  usage: "retention seed-demo [--json] [--no-auth]",
  details: `Writes the AtlasMart demo documents (t-acme, u-1001, u-1002, o-1001, ...) with their retention fields,
and creates the demo's Auth users (two customers, two compliance officers, one retention-admin). Running it
again resets the demo documents and keeps their retention anchors. Emulators only: it creates users with a
published demo password, which must never happen in a real project.

Options:
  --no-auth   documents only; do not touch Auth
  --json      machine-readable output

Exit: 0 seeded, 2 usage or connection error.`,
  options: { "no-auth": { type: "boolean" } },
  positionals: [],
  needsFirestore: true,
  validate({ values, target }) {
    if (!target.emulator) throw new UsageError("seed-demo runs on the emulators only (set FIRESTORE_EMULATOR_HOST).");
    if (values["no-auth"] !== true && !target.authEmulator) {
      throw new UsageError("FIREBASE_AUTH_EMULATOR_HOST is not set: start the Auth emulator too, or pass --no-auth.");
    }
  },
  async run({ values, json }) {
    const withAuth = values["no-auth"] !== true;
    const r = await seedDemo({ nowMs: Date.now(), withAuth });
    if (json) writeJson(r);
    else writeOut(keyValues([["documents", r.documents], ["auth users", r.users]]));
    return EXIT.ok;
  },
};
