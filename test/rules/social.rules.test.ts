// The social example's rules (examples/social/firestore.rules): each role (a chat member, a member of the app
// who is not in the chat, anonymous) against each collection, allowed and denied, on documents shaped as the
// governed write path stores them under the social registry.
import { readFileSync } from "node:fs";
import { assertFails, assertSucceeds, type RulesTestEnvironment } from "@firebase/rules-unit-testing";
import {
  Timestamp,
  collection,
  deleteDoc,
  deleteField,
  doc,
  getDoc,
  getDocs,
  query,
  setDoc,
  updateDoc,
  where,
  writeBatch,
  type DocumentData,
  type Firestore,
} from "firebase/firestore";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { SOCIAL_DOCS } from "../../examples/social/data";
import { SOCIAL_RULES_FILE, socialPolicy } from "../../examples/social/registry";
import { NO_SCOPE } from "../../examples/social/seed";
import { PROTECTED_FIELDS } from "../../functions/src/kernel/governed";
import { prepareGovernedWrite } from "../../functions/src/kernel/governed-write";
import { clientAs, readRaw, startRulesEnv, type Identity } from "../helpers/rules";

const NOW = Date.now();
const DAY_MS = 86_400_000;

/** Ana is in ch-ana-bo; Cy is a member of the app but not of that chat. */
const MEMBER: Identity = { uid: "u-ana", claims: {}, label: "u-ana (chat member)" };
const NON_MEMBER: Identity = { uid: "u-cy", claims: {}, label: "u-cy (not in the chat)" };
const ANONYMOUS: Identity = { uid: null, claims: {}, label: "anonymous" };

const CHAT = "chats/ch-ana-bo";
const MESSAGE = `${CHAT}/messages/m-01`;
const PROFILE = "users/u-ana";

/** The social demo as the governed write path writes it at NOW: class by path, ACTIVE, no scope. */
function governedFixture(): { path: string; data: DocumentData }[] {
  const pol = socialPolicy();
  return SOCIAL_DOCS.map((d) => {
    const g = prepareGovernedWrite({ path: d.path, data: d.data, tenantId: NO_SCOPE, existing: null, nowMs: NOW }, pol);
    const data: DocumentData = {
      ...d.data,
      retentionClass: g.retentionClass,
      lifecycleState: g.lifecycleState,
      tenantId: g.tenantId,
      policyVersion: g.policyVersion,
      createdAt: Timestamp.fromMillis(g.createdAtMs),
      legalHold: g.legalHold,
      holdIds: g.holdIds,
    };
    if (g.expireAtMs !== null) data.expireAt = Timestamp.fromMillis(g.expireAtMs);
    if (g.retainUntilMs !== null) data.retainUntil = Timestamp.fromMillis(g.retainUntilMs);
    return { path: d.path, data };
  });
}

/** One document per control-plane collection, and one in a collection the app does not have. */
const CONTROL_PLANE = ["deletionRequests", "retentionHolds", "deletionAudits", "processedEvents", "archives", "retentionJobs", "retentionReports"] as const;
const controlPlaneDocs = (): { path: string; data: DocumentData }[] => [
  ...CONTROL_PLANE.map((c) => ({ path: `${c}/x-001`, data: { uid: "u-ana", state: "PENDING", at: Timestamp.fromMillis(NOW) } })),
  { path: "scratchpad/x-001", data: { note: "a collection no rule names" } },
];

async function seed(env: RulesTestEnvironment, docs: readonly { path: string; data: DocumentData }[], merge = false): Promise<void> {
  await env.withSecurityRulesDisabled(async (ctx) => {
    const db = ctx.firestore() as unknown as Firestore;
    const batch = writeBatch(db);
    for (const d of docs) batch.set(doc(db, d.path), d.data, { merge });
    await batch.commit();
  });
}

let env: RulesTestEnvironment | undefined;
const current = (): RulesTestEnvironment => {
  if (!env) throw new Error("the rules test environment is not initialised");
  return env;
};
const as = (who: Identity): Firestore => clientAs(current(), who);
const softDelete = (path: string) => seed(current(), [{ path, data: { lifecycleState: "SOFT_DELETED", softDeletedAt: Timestamp.fromMillis(NOW) } }], true);

beforeAll(async () => {
  env = await startRulesEnv({ rulesFile: SOCIAL_RULES_FILE, projectId: "demo-social-firestore" });
});
beforeEach(async () => {
  await current().clearFirestore();
  await seed(current(), [...governedFixture(), ...controlPlaneDocs()]);
});
afterAll(async () => {
  await env?.cleanup();
});

describe("the social rules mirror PROTECTED_FIELDS", () => {
  it("protectedFields() lists exactly kernel/governed.ts PROTECTED_FIELDS, inside the retention markers", () => {
    const rules = readFileSync(SOCIAL_RULES_FILE, "utf8");
    const block = /\/\/ <retention:begin>([\s\S]*?)\/\/ <retention:end>/.exec(rules)?.[1] ?? "";
    const body = /function protectedFields\(\)\s*\{\s*return\s*\[([^\]]*)\]/.exec(block)?.[1];
    expect(body, "the retention block defines protectedFields()").toBeDefined();
    expect([...(body ?? "").matchAll(/'([^']+)'/g)].map((m) => m[1]).sort()).toEqual([...PROTECTED_FIELDS].sort());
    for (const c of CONTROL_PLANE) expect(block, `${c} is closed in the retention block`).toContain(`match /${c}/{document=**}`);
  });
});

describe("users and following", () => {
  it("member | users | get a profile | allow; anonymous | deny", async () => {
    await assertSucceeds(getDoc(doc(as(MEMBER), "users/u-bo")));
    await assertSucceeds(getDoc(doc(as(NON_MEMBER), PROFILE)));
    await assertFails(getDoc(doc(as(ANONYMOUS), PROFILE)));
  });

  it("member | users | list with lifecycleState == ACTIVE | allow; without it | deny", async () => {
    const r = await assertSucceeds(getDocs(query(collection(as(MEMBER), "users"), where("lifecycleState", "==", "ACTIVE"))));
    expect(r.size).toBe(3);
    await assertFails(getDocs(collection(as(MEMBER), "users")));
  });

  it("owner | users | update displayName and bio | allow; another member | deny; anonymous | deny", async () => {
    await assertSucceeds(updateDoc(doc(as(MEMBER), PROFILE), { displayName: "Ana L.", bio: "Climbs." }));
    expect(await readRaw(current(), PROFILE)).toMatchObject({ displayName: "Ana L.", bio: "Climbs.", lifecycleState: "ACTIVE", retentionClass: "user-delete" });
    await assertFails(updateDoc(doc(as(NON_MEMBER), PROFILE), { displayName: "Not Ana" }));
    await assertFails(updateDoc(doc(as(ANONYMOUS), PROFILE), { displayName: "Not Ana" }));
  });

  it.each(PROTECTED_FIELDS.map((f) => [f]))("owner | users | update displayName and set %s | deny", async (field) => {
    const before = await readRaw(current(), PROFILE);
    await assertFails(updateDoc(doc(as(MEMBER), PROFILE), { displayName: "Ana L.", [field]: field === "lifecycleState" ? "LEGAL_HOLD" : `forged-${field}` }));
    expect(await readRaw(current(), PROFILE)).toEqual(before);
  });

  it("owner | users | remove a retention field (lifecycleState) | deny", async () => {
    await assertFails(updateDoc(doc(as(MEMBER), PROFILE), { lifecycleState: deleteField() }));
  });

  it("owner | users | create or delete | deny (server code creates; erasure goes through a request)", async () => {
    await assertFails(setDoc(doc(as(MEMBER), "users/u-new"), { displayName: "New" }));
    await assertFails(setDoc(doc(as({ uid: "u-new", claims: {}, label: "u-new" }), "users/u-new"), { displayName: "New" }));
    await assertFails(deleteDoc(doc(as(MEMBER), PROFILE)));
  });

  it("member | users | a soft-deleted profile | deny get and update", async () => {
    await softDelete(PROFILE);
    await assertFails(getDoc(doc(as(NON_MEMBER), PROFILE)));
    await assertFails(getDoc(doc(as(MEMBER), PROFILE)));
    await assertFails(updateDoc(doc(as(MEMBER), PROFILE), { displayName: "Ana L." }));
  });

  it("member | following | read | allow; anonymous | deny; any write | deny", async () => {
    await assertSucceeds(getDoc(doc(as(NON_MEMBER), "users/u-ana/following/u-bo")));
    await assertFails(getDoc(doc(as(ANONYMOUS), "users/u-ana/following/u-bo")));
    await assertFails(setDoc(doc(as(MEMBER), "users/u-ana/following/u-new"), { followeeId: "u-new" }));
    await assertFails(updateDoc(doc(as(MEMBER), "users/u-ana/following/u-bo"), { followeeId: "u-cy" }));
    await assertFails(deleteDoc(doc(as(MEMBER), "users/u-ana/following/u-bo")));
  });
});

describe("posts and comments", () => {
  it("member | posts | get, list ACTIVE | allow; anonymous | deny", async () => {
    await assertSucceeds(getDoc(doc(as(NON_MEMBER), "posts/p-ana-1")));
    const r = await assertSucceeds(getDocs(query(collection(as(MEMBER), "posts"), where("authorId", "==", "u-bo"), where("lifecycleState", "==", "ACTIVE"))));
    expect(r.docs.map((d) => d.id)).toEqual(["p-bo-1"]);
    await assertFails(getDoc(doc(as(ANONYMOUS), "posts/p-ana-1")));
  });

  it("author | posts | update text | allow; another member | deny; a retention field | deny; create, delete | deny", async () => {
    await assertSucceeds(updateDoc(doc(as(MEMBER), "posts/p-ana-1"), { text: "Edited." }));
    await assertFails(updateDoc(doc(as(NON_MEMBER), "posts/p-ana-1"), { text: "Hijacked." }));
    await assertFails(updateDoc(doc(as(MEMBER), "posts/p-ana-1"), { text: "Edited again.", retentionClass: "shared-thread" }));
    await assertFails(updateDoc(doc(as(MEMBER), "posts/p-ana-1"), { authorId: "u-bo" }));
    await assertFails(setDoc(doc(as(MEMBER), "posts/p-new"), { authorId: "u-ana", text: "Hello" }));
    await assertFails(deleteDoc(doc(as(MEMBER), "posts/p-ana-1")));
    await assertFails(updateDoc(doc(as(ANONYMOUS), "posts/p-ana-1"), { text: "Anon." }));
  });

  it("member | comments | read | allow; anonymous | deny; a soft-deleted post hides its comments", async () => {
    await assertSucceeds(getDoc(doc(as(MEMBER), "posts/p-bo-1/comments/c-cy-2")));
    await assertFails(getDoc(doc(as(ANONYMOUS), "posts/p-bo-1/comments/c-cy-2")));
    await softDelete("posts/p-bo-1");
    await assertFails(getDoc(doc(as(MEMBER), "posts/p-bo-1")));
    await assertFails(getDoc(doc(as(MEMBER), "posts/p-bo-1/comments/c-cy-2")));
  });

  it("author | comments | update text | allow; the post's author | deny; a retention field | deny; create | deny", async () => {
    await assertSucceeds(updateDoc(doc(as(NON_MEMBER), "posts/p-ana-1/comments/c-cy-1"), { text: "Which route, again?" }));
    await assertFails(updateDoc(doc(as(MEMBER), "posts/p-ana-1/comments/c-cy-1"), { text: "Ana rewrites Cy." }));
    await assertFails(updateDoc(doc(as(NON_MEMBER), "posts/p-ana-1/comments/c-cy-1"), { text: "x", legalHold: true }));
    await assertFails(setDoc(doc(as(MEMBER), "posts/p-bo-1/comments/c-new"), { authorId: "u-ana", text: "New" }));
    await assertFails(deleteDoc(doc(as(NON_MEMBER), "posts/p-ana-1/comments/c-cy-1")));
  });
});

describe("chats and messages", () => {
  it("member | chats | get | allow; non-member | deny; anonymous | deny", async () => {
    await assertSucceeds(getDoc(doc(as(MEMBER), CHAT)));
    await assertFails(getDoc(doc(as(NON_MEMBER), CHAT)));
    await assertFails(getDoc(doc(as(ANONYMOUS), CHAT)));
  });

  it("member | chats | list their chats (memberIds array-contains uid, ACTIVE) | allow; any other list | deny", async () => {
    const mine = await assertSucceeds(
      getDocs(query(collection(as(NON_MEMBER), "chats"), where("memberIds", "array-contains", "u-cy"), where("lifecycleState", "==", "ACTIVE"))),
    );
    expect(mine.docs.map((d) => d.id).sort()).toEqual(["ch-bo-cy", "ch-trio"]);
    await assertFails(getDocs(query(collection(as(NON_MEMBER), "chats"), where("memberIds", "array-contains", "u-ana"), where("lifecycleState", "==", "ACTIVE"))));
    await assertFails(getDocs(query(collection(as(MEMBER), "chats"), where("lifecycleState", "==", "ACTIVE"))));
  });

  it("member | chats | rename | allow; change memberIds | deny; a retention field | deny; non-member | deny; create, delete | deny", async () => {
    await assertSucceeds(updateDoc(doc(as(MEMBER), CHAT), { title: "Coffee club" }));
    await assertFails(updateDoc(doc(as(MEMBER), CHAT), { memberIds: ["u-ana", "u-bo", "u-cy"] }));
    await assertFails(updateDoc(doc(as(MEMBER), CHAT), { title: "Held?", holdIds: [], lifecycleState: "ACTIVE", legalHold: false, deletionRequestId: "dr-x" }));
    await assertFails(updateDoc(doc(as(NON_MEMBER), CHAT), { title: "Let me in" }));
    await assertFails(setDoc(doc(as(MEMBER), "chats/ch-new"), { title: "New", memberIds: ["u-ana"] }));
    await assertFails(deleteDoc(doc(as(MEMBER), CHAT)));
  });

  it("member | messages | read | allow; non-member | deny; anonymous | deny", async () => {
    await assertSucceeds(getDoc(doc(as(MEMBER), `${CHAT}/messages/m-02`)));
    await assertSucceeds(getDocs(query(collection(as(MEMBER), `${CHAT}/messages`), where("lifecycleState", "==", "ACTIVE"))));
    await assertFails(getDoc(doc(as(NON_MEMBER), MESSAGE)));
    await assertFails(getDocs(query(collection(as(NON_MEMBER), `${CHAT}/messages`), where("lifecycleState", "==", "ACTIVE"))));
    await assertFails(getDoc(doc(as(ANONYMOUS), MESSAGE)));
  });

  it("sender | messages | edit text | allow; another member | deny; a retention field | deny; send (create), delete | deny", async () => {
    await assertSucceeds(updateDoc(doc(as(MEMBER), MESSAGE), { text: "Coffee at ten?" }));
    await assertFails(updateDoc(doc(as({ uid: "u-bo", claims: {}, label: "u-bo" }), MESSAGE), { text: "Bo rewrites Ana." }));
    await assertFails(updateDoc(doc(as(MEMBER), MESSAGE), { text: "x", expireAt: Timestamp.fromMillis(NOW + 3650 * DAY_MS) }));
    await assertFails(updateDoc(doc(as(NON_MEMBER), MESSAGE), { text: "Not mine." }));
    await assertFails(setDoc(doc(as(MEMBER), `${CHAT}/messages/m-new`), { senderId: "u-ana", text: "Hi" }));
    await assertFails(deleteDoc(doc(as(MEMBER), MESSAGE)));
  });

  it("a member taken out of memberIds (an erasure's removeFromArray) reads neither the chat nor its messages", async () => {
    await seed(current(), [{ path: CHAT, data: { memberIds: ["u-bo"] } }], true);
    await assertFails(getDoc(doc(as(MEMBER), CHAT)));
    await assertFails(getDoc(doc(as(MEMBER), `${CHAT}/messages/m-02`)));
    await assertSucceeds(getDoc(doc(as({ uid: "u-bo", claims: {}, label: "u-bo" }), `${CHAT}/messages/m-02`)));
  });

  it("a chat that is not ACTIVE (held or soft-deleted) hides its messages from its members", async () => {
    await seed(current(), [{ path: CHAT, data: { lifecycleState: "LEGAL_HOLD", legalHold: true } }], true);
    await assertFails(getDoc(doc(as(MEMBER), CHAT)));
    await assertFails(getDoc(doc(as(MEMBER), `${CHAT}/messages/m-02`)));
  });
});

describe("notifications (registry v2: kept 30 days by TTL)", () => {
  const MINE = "notifications/n-ana-1";
  const BOS = "notifications/n-bo-1";
  // A bound the rules can compare with request.time: a minute ahead of it, as an app's query would say "still live".
  const soon = () => Timestamp.fromMillis(Date.now() + 60_000);
  const live = (who: Identity) => query(collection(as(who), "notifications"), where("recipientId", "==", who.uid), where("lifecycleState", "==", "ACTIVE"), where("expireAt", ">", soon()));

  it("recipient | notifications | get and list their own live ones | allow; another member's | deny; anonymous | deny", async () => {
    await assertSucceeds(getDoc(doc(as(MEMBER), MINE)));
    expect((await assertSucceeds(getDocs(live(MEMBER)))).docs.map((d) => d.id).sort()).toEqual(["n-ana-1", "n-ana-2"]);
    await assertFails(getDoc(doc(as(MEMBER), BOS)));
    await assertFails(getDoc(doc(as(ANONYMOUS), MINE)));
    // A list that does not prove every result is hers, ACTIVE and unexpired is refused.
    await assertFails(getDocs(query(collection(as(MEMBER), "notifications"), where("recipientId", "==", "u-ana"), where("lifecycleState", "==", "ACTIVE"))));
    await assertFails(getDocs(query(collection(as(MEMBER), "notifications"), where("lifecycleState", "==", "ACTIVE"), where("expireAt", ">", soon()))));
  });

  it("recipient | notifications | past its TTL value (waiting for the sweeper), or soft-deleted | deny", async () => {
    await seed(current(), [{ path: MINE, data: { expireAt: Timestamp.fromMillis(NOW - DAY_MS) } }], true);
    await assertFails(getDoc(doc(as(MEMBER), MINE)));
    await softDelete("notifications/n-ana-2");
    await assertFails(getDoc(doc(as(MEMBER), "notifications/n-ana-2")));
  });

  it("recipient | notifications | create, update, delete | deny (the server writes them)", async () => {
    await assertFails(setDoc(doc(as(MEMBER), "notifications/n-new"), { recipientId: "u-ana", kind: "FOLLOW", text: "x" }));
    await assertFails(updateDoc(doc(as(MEMBER), MINE), { text: "read" }));
    await assertFails(deleteDoc(doc(as(MEMBER), MINE)));
  });
});

describe("the control plane and everything else", () => {
  const roles = [MEMBER, NON_MEMBER, ANONYMOUS, { uid: "s-dana", claims: { roles: ["compliance"] }, label: "compliance s-dana" }];
  it.each(CONTROL_PLANE.map((c) => [c]))("every role | %s | read, list, write | deny", async (c) => {
    for (const who of roles) {
      await assertFails(getDoc(doc(as(who), `${c}/x-001`)));
      await assertFails(getDocs(collection(as(who), c)));
      await assertFails(setDoc(doc(as(who), `${c}/x-002`), { uid: who.uid }));
      await assertFails(updateDoc(doc(as(who), `${c}/x-001`), { state: "CANCELLED" }));
      await assertFails(deleteDoc(doc(as(who), `${c}/x-001`)));
    }
  });

  it("every role | a collection no rule names | deny", async () => {
    for (const who of roles) {
      await assertFails(getDoc(doc(as(who), "scratchpad/x-001")));
      await assertFails(setDoc(doc(as(who), "scratchpad/x-002"), { note: "x" }));
    }
  });
});
