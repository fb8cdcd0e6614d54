// Rules generated for a single-tenant app (a registry with no subjects.scope), loaded into the rules emulator with
// a small app's own match blocks around them: a client still cannot write any retention field nor read a document
// that is not visible (soft-deleted, held, expired), with no tenant claim and no scope record involved. Every denial
// has a positive control on the same document, so it cannot come from missing data or a broken rules file.
import { assertFails, assertSucceeds, initializeTestEnvironment, type RulesTestEnvironment } from "@firebase/rules-unit-testing";
import { Timestamp, collection, deleteField, doc, getDoc, getDocs, query, setDoc, updateDoc, where, type DocumentData } from "firebase/firestore";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { PROTECTED_FIELDS } from "../../functions/src/kernel/governed";
import { RULES_BEGIN, RULES_END, generateRetentionRules, spliceRetentionRules } from "../../functions/src/security-rules/rules";
import { smallAppRegistry } from "../helpers/policy";
import { clientAs, readRaw, seed, type Identity } from "../helpers/rules";

const PROJECT_ID = "demo-retention-no-scope";

/** The app's own rules: notes owned by a uid, each create and update guarded by the generated writesNoRetentionField(). */
const APP_RULES = [
  "rules_version = '2';",
  "service cloud.firestore {",
  "  match /databases/{database}/documents {",
  `    ${RULES_BEGIN}`,
  `    ${RULES_END}`,
  "",
  "    match /notes/{noteId} {",
  "      allow read: if isAppUser() && resource.data.ownerUid == request.auth.uid && isVisible(resource.data);",
  "      allow create: if isAppUser() && request.resource.data.ownerUid == request.auth.uid && writesNoRetentionField();",
  "      allow update: if isAppUser() && resource.data.ownerUid == request.auth.uid && isVisible(resource.data)",
  "        && request.resource.data.ownerUid == request.auth.uid && writesNoRetentionField();",
  "    }",
  "  }",
  "}",
  "",
].join("\n");

const ADA: Identity = { uid: "u-1", claims: {}, label: "app user u-1 (no scope claim)" };
const DAY_MS = 86_400_000;

function governed(ownerUid: string, extra: DocumentData = {}): DocumentData {
  return {
    ownerUid,
    text: "hello",
    retentionClass: "user-delete",
    lifecycleState: "ACTIVE",
    tenantId: "",
    policyVersion: smallAppRegistry().version,
    createdAt: Timestamp.fromMillis(Date.now() - DAY_MS),
    legalHold: false,
    holdIds: [],
    ...extra,
  };
}

function hostPort(): { host: string; port: number } {
  const hp = process.env.FIRESTORE_EMULATOR_HOST;
  if (!hp) throw new Error("FIRESTORE_EMULATOR_HOST is not set: run under scripts/emulators.mjs");
  const sep = hp.lastIndexOf(":");
  return { host: hp.slice(0, sep), port: Number(hp.slice(sep + 1)) };
}

describe("rules generated for a registry without a scope kind", () => {
  let env: RulesTestEnvironment;
  const rules = spliceRetentionRules(APP_RULES, generateRetentionRules(smallAppRegistry()));
  const ada = () => clientAs(env, ADA);

  beforeAll(async () => {
    expect(rules).toContain("function writesNoRetentionField()");
    expect(rules).not.toContain("exists(");
    env = await initializeTestEnvironment({ projectId: PROJECT_ID, firestore: { rules, ...hostPort() } });
  });
  afterAll(async () => {
    await env.cleanup();
  });
  beforeEach(async () => {
    await env.clearFirestore();
    await seed(env, [
      { path: "notes/n-active", data: governed("u-1") },
      { path: "notes/n-soft", data: governed("u-1", { lifecycleState: "SOFT_DELETED", softDeletedAt: Timestamp.now(), preDeleteState: "ACTIVE" }) },
      { path: "notes/n-held", data: governed("u-1", { lifecycleState: "LEGAL_HOLD", legalHold: true, holdIds: ["h-1"] }) },
      { path: "notes/n-expired", data: governed("u-1", { expireAt: Timestamp.fromMillis(Date.now() - DAY_MS) }) },
      { path: "deletionRequests/dr-1", data: { subjectUid: "u-1", state: "PENDING" } },
    ]);
  });

  it("the owner reads their ACTIVE note and edits its text (positive controls)", async () => {
    expect((await assertSucceeds(getDoc(doc(ada(), "notes/n-active")))).exists()).toBe(true);
    await assertSucceeds(updateDoc(doc(ada(), "notes/n-active"), { text: "edited" }));
    expect((await readRaw(env, "notes/n-active"))?.text).toBe("edited");
    await assertSucceeds(setDoc(doc(ada(), "notes/n-new"), { ownerUid: "u-1", text: "new" }));
  });

  it.each(["n-soft", "n-held", "n-expired"])("owner | notes/%s | get a document that is not visible | deny", async (id) => {
    expect((await readRaw(env, `notes/${id}`))?.ownerUid).toBe("u-1");
    await assertFails(getDoc(doc(ada(), `notes/${id}`)));
  });

  it("owner | notes | a list query must prove visibility: with lifecycleState == 'ACTIVE' allow, without it deny", async () => {
    const mine = where("ownerUid", "==", "u-1");
    await assertFails(getDocs(query(collection(ada(), "notes"), mine)));
    const active = await assertSucceeds(getDocs(query(collection(ada(), "notes"), mine, where("lifecycleState", "==", "ACTIVE"))));
    expect(active.docs.map((d) => d.id)).toContain("n-active");
    expect(active.docs.map((d) => d.id)).not.toContain("n-soft");
    expect(active.docs.map((d) => d.id)).not.toContain("n-held");
  });

  it.each(PROTECTED_FIELDS.map((f) => [f]))("owner | notes/n-active | update text and set %s | deny", async (field) => {
    const before = await readRaw(env, "notes/n-active");
    await assertFails(updateDoc(doc(ada(), "notes/n-active"), { text: "edited", [field]: "forged" }));
    expect(await readRaw(env, "notes/n-active")).toEqual(before);
  });

  it.each(["retentionClass", "lifecycleState", "createdAt", "legalHold"].map((f) => [f]))("owner | notes/n-active | remove %s | deny", async (field) => {
    await assertFails(updateDoc(doc(ada(), "notes/n-active"), { [field]: deleteField() }));
  });

  it.each(PROTECTED_FIELDS.map((f) => [f]))("owner | notes/n-forged | create with %s | deny", async (field) => {
    await assertFails(setDoc(doc(ada(), "notes/n-forged"), { ownerUid: "u-1", text: "x", [field]: "forged" }));
    expect(await readRaw(env, "notes/n-forged")).toBeUndefined();
  });

  it("the control plane is out of reach of every client", async () => {
    await assertFails(getDoc(doc(ada(), "deletionRequests/dr-1")));
    await assertFails(setDoc(doc(ada(), "deletionRequests/dr-2"), { subjectUid: "u-1" }));
  });
});
