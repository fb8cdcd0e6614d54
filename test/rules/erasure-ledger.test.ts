// The erasure ledger's database admits no client: its own rules deny everything to every role, and the app
// database's rules match nothing there either (anything not matched is denied).
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { assertFails, initializeTestEnvironment, type RulesTestEnvironment } from "@firebase/rules-unit-testing";
import { collection, deleteDoc, doc, getDoc, getDocs, setDoc, updateDoc } from "firebase/firestore";
import { afterAll, beforeAll, describe, it } from "vitest";
import { repoRoot } from "../helpers/policy";
import { IDENTITIES, ROLES, clientAs } from "../helpers/rules";

const ENTRY = { requestId: "req-1", subjectKind: "user", subjectHash: "ab".repeat(32), tenantHash: "cd".repeat(32), policyVersion: "v1", masked: [] };

function hostPort(): { host: string; port: number } {
  const hp = process.env.FIRESTORE_EMULATOR_HOST;
  if (!hp) throw new Error("FIRESTORE_EMULATOR_HOST is not set: run under scripts/emulators.mjs");
  const sep = hp.lastIndexOf(":");
  return { host: hp.slice(0, sep), port: Number(hp.slice(sep + 1)) };
}

for (const [label, file, projectId] of [
  ["firestore.ledger.rules (the ledger database's own rules)", "firestore.ledger.rules", "demo-atlasmart-ledger"],
  ["firestore.rules (the app database's rules)", "firestore.rules", "demo-atlasmart-ledger-app"],
] as const) {
  describe(`erasureLedger under ${label}`, () => {
    let env: RulesTestEnvironment;
    beforeAll(async () => {
      env = await initializeTestEnvironment({ projectId, firestore: { rules: readFileSync(resolve(repoRoot, file), "utf8"), ...hostPort() } });
      await env.clearFirestore();
      await env.withSecurityRulesDisabled(async (ctx) => {
        await setDoc(doc(ctx.firestore() as unknown as Parameters<typeof doc>[0], "erasureLedger/req-1"), ENTRY);
      });
    });
    afterAll(async () => {
      await env.clearFirestore();
      await env.cleanup();
    });

    for (const role of ROLES) {
      it(`denies ${IDENTITIES[role].label} every read and write`, async () => {
        const fs = clientAs(env, role);
        await assertFails(getDoc(doc(fs, "erasureLedger/req-1")));
        await assertFails(getDocs(collection(fs, "erasureLedger")));
        await assertFails(setDoc(doc(fs, "erasureLedger/req-2"), ENTRY));
        await assertFails(updateDoc(doc(fs, "erasureLedger/req-1"), { policyVersion: "v2" }));
        await assertFails(deleteDoc(doc(fs, "erasureLedger/req-1")));
      });
    }
  });
}
