/**
 * Shared helpers for emulator-backed tests: admin access, data reset, Auth-emulator tokens and callable
 * invocation over HTTP exactly as a client SDK would (POST {data}, Bearer ID token).
 */
import { getAuth } from "firebase-admin/auth";
import { ANCHOR_DATABASE, localAnchors } from "../../functions/src/platform/anchors";
import { adminApp, db } from "../../functions/src/platform/firestore";
import { LOCAL_KMS_DATABASE } from "../../functions/src/platform/kms";
import { ARCHIVE_KEYS } from "../../functions/src/shred/keys";
import { settleDeleteTriggers } from "./triggers";

export const PROJECT_ID = process.env.GCLOUD_PROJECT ?? "demo-atlasmart-firestore";
export const REGION = "us-central1";

export function firestoreHost(): string {
  const host = process.env.FIRESTORE_EMULATOR_HOST;
  if (!host) throw new Error("FIRESTORE_EMULATOR_HOST is not set: run under scripts/emulators.mjs");
  return host;
}

export { db, adminApp };

/** Resets tried before a lock held by another transaction fails the clear (each waits out the emulator's lock timeout). */
const CLEAR_ATTEMPTS = 4;

/**
 * Deletes every document in one of the emulator's databases (the emulator's reset endpoint), and the evidence
 * anchors kept for it in the anchors database: anchors of a ledger that no longer exists would report it wiped; and
 * the archive's data keys of it (and, for a ledger database, the stand-in KMS keys of its ring), as a fresh project has none.
 * With the functions running, their delete triggers are quieted first (./triggers.ts): the reset fires a delete
 * event for every document it removes.
 */
export async function clearFirestore(databaseId = "(default)"): Promise<void> {
  await settleDeleteTriggers(databaseId);
  const url = `http://${firestoreHost()}/emulator/v1/projects/${PROJECT_ID}/databases/${databaseId}/documents`;
  // A transaction still holding locks (a trigger or task of the previous test, or a rollback the Admin SDK left to
  // run in the background) makes the reset wait for the emulator's lock timeout and answer 409 ABORTED. The locks
  // are gone once that transaction ends, so the reset is tried again rather than failing the next test.
  for (let attempt = 1; ; attempt++) {
    const res = await fetch(url, { method: "DELETE" });
    if (res.ok) break;
    const body = await res.text();
    if (res.status !== 409 || attempt >= CLEAR_ATTEMPTS) throw new Error(`clearing Firestore failed: ${res.status} ${body}`);
    await new Promise((r) => setTimeout(r, 250 * attempt));
  }
  await clearAnchors(databaseId);
  await clearLocalKms(databaseId);
  await clearDataKeysOf(databaseId);
}

/**
 * Deletes the archive's data keys of one governed database from the ledger's key store (shred/keys.ts): a cleared
 * database starts without keys, as a fresh project would, so no suite sees another's keys.
 */
export async function clearDataKeysOf(databaseId: string): Promise<void> {
  const ledger = process.env.RETENTION_LEDGER_DATABASE_ID || "erasure-ledger";
  if (ledger === databaseId) return;
  for (;;) {
    const snap = await db(ledger).collection(ARCHIVE_KEYS).where("database", "==", databaseId).limit(400).get();
    if (snap.empty) return;
    const batch = db(ledger).batch();
    for (const d of snap.docs) batch.delete(d.ref);
    await batch.commit();
  }
}

/**
 * Deletes the emulators' stand-in KMS keys of one ring (platform/kms.ts): a ring is named after the ledger database
 * whose data keys it wraps, so clearing that database clears its keys too.
 */
export async function clearLocalKms(ringId: string): Promise<void> {
  const col = db(LOCAL_KMS_DATABASE).collection("rings").doc(ringId).collection("keks");
  for (;;) {
    const snap = await col.limit(400).get();
    if (snap.empty) return;
    const batch = db(LOCAL_KMS_DATABASE).batch();
    for (const d of snap.docs) batch.delete(d.ref);
    await batch.commit();
  }
}

/** Deletes the evidence anchors the emulators keep for one governed database. */
export async function clearAnchors(databaseId = "(default)"): Promise<void> {
  const col = localAnchors(databaseId);
  for (;;) {
    const snap = await col.limit(400).get();
    if (snap.empty) return;
    const batch = db(ANCHOR_DATABASE).batch();
    for (const d of snap.docs) batch.delete(d.ref);
    await batch.commit();
  }
}

/** Deletes every Auth-emulator account. */
export async function clearAuth(): Promise<void> {
  const host = process.env.FIREBASE_AUTH_EMULATOR_HOST;
  if (!host) throw new Error("FIREBASE_AUTH_EMULATOR_HOST is not set");
  const res = await fetch(`http://${host}/emulator/v1/projects/${PROJECT_ID}/accounts`, { method: "DELETE" });
  if (!res.ok) throw new Error(`clearing Auth failed: ${res.status}`);
}

export interface TestUser {
  uid: string;
  claims?: { tenantId?: string; roles?: string[] };
}

/** Creates (or updates) an Auth-emulator user with custom claims and returns a fresh ID token. */
export async function idTokenFor(user: TestUser): Promise<string> {
  const auth = getAuth(adminApp());
  try {
    await auth.getUser(user.uid);
  } catch {
    await auth.createUser({ uid: user.uid });
  }
  await auth.setCustomUserClaims(user.uid, user.claims ?? {});
  const customToken = await auth.createCustomToken(user.uid);
  const host = process.env.FIREBASE_AUTH_EMULATOR_HOST;
  const res = await fetch(`http://${host}/identitytoolkit.googleapis.com/v1/accounts:signInWithCustomToken?key=fake-api-key`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token: customToken, returnSecureToken: true }),
  });
  const body = (await res.json()) as { idToken?: string; error?: unknown };
  if (!body.idToken) throw new Error(`sign-in failed: ${JSON.stringify(body.error)}`);
  return body.idToken;
}

export interface CallableError {
  status: string;
  message: string;
  details?: { reason?: string; [k: string]: unknown };
}

export type CallableResult<T> = { ok: true; data: T } | { ok: false; error: CallableError; httpStatus: number };

/** Calls a deployed (emulated) callable. `token` null calls without auth. */
export async function call<T = unknown>(name: string, data: unknown, token: string | null): Promise<CallableResult<T>> {
  const origin = process.env.FUNCTIONS_EMULATOR_ORIGIN ?? "http://127.0.0.1:5001";
  const res = await fetch(`${origin}/${PROJECT_ID}/${REGION}/${name}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ data }),
  });
  const body = (await res.json()) as { result?: T; error?: CallableError };
  if (body.error) return { ok: false, error: body.error, httpStatus: res.status };
  return { ok: true, data: body.result as T };
}

/** Calls and expects success; throws with the error otherwise. */
export async function callOk<T = unknown>(name: string, data: unknown, token: string | null): Promise<T> {
  const r = await call<T>(name, data, token);
  if (!r.ok) throw new Error(`${name} failed: ${JSON.stringify(r.error)}`);
  return r.data;
}

/** Waits on a condition with a timeout (never a bare sleep as the assertion). */
export async function waitFor<T>(probe: () => Promise<T | undefined | null | false>, what: string, timeoutMs = 20_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() - started > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
