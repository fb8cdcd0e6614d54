/**
 * Shared set-up for the callable suites: a freshly seeded demo, one ID token per demo role, a snapshot of
 * every document (to prove that refused calls write nothing) and the evidence ledger as stored.
 */
import type { DocumentReference, Firestore } from "firebase-admin/firestore";
import { expect } from "vitest";
import type { ChainedEvidence, ChainHead } from "../../../../functions/src/evidence/rules";
import { readHeads } from "../../../../functions/src/evidence/anchor";
import { verifyEvidence } from "../../../../functions/src/evidence/verify";
import { seedDemo } from "../../../../examples/atlasmart/seed";
import { call, clearAuth, clearFirestore, db, idTokenFor, type CallableResult } from "../../../helpers/emulator";

export const T0 = Date.now();

export interface Tokens {
  ada: string;
  ben: string;
  clara: string;
  dev: string;
  rita: string;
  /** A signed-in account with no tenant and no role. */
  stranger: string;
}

/** Clears both emulators, seeds the demo (documents and Auth users) and signs every role in. */
export async function freshDemo(): Promise<Tokens> {
  await clearFirestore();
  await clearAuth();
  await seedDemo({ nowMs: Date.now() });
  const [ada, ben, clara, dev, rita, stranger] = await Promise.all([
    idTokenFor({ uid: "u-1001", claims: { tenantId: "t-acme" } }),
    idTokenFor({ uid: "u-1002", claims: { tenantId: "t-acme" } }),
    idTokenFor({ uid: "c-2001", claims: { roles: ["compliance"] } }),
    idTokenFor({ uid: "c-2002", claims: { roles: ["compliance"] } }),
    idTokenFor({ uid: "r-3001", claims: { roles: ["retention-admin"] } }),
    idTokenFor({ uid: "x-9001", claims: {} }),
  ]);
  return { ada, ben, clara, dev, rita, stranger };
}

/** Expects a refusal with this HttpsError status (as the wire spells it) and details.reason. */
export function expectRefused(r: CallableResult<unknown>, status: string, reason?: string): void {
  if (r.ok) throw new Error(`expected ${status}${reason ? `/${reason}` : ""}, got success ${JSON.stringify(r.data)}`);
  expect(r.error.status, JSON.stringify(r.error)).toBe(status);
  if (reason) expect(r.error.details?.reason, JSON.stringify(r.error)).toBe(reason);
}

export async function callExpect<T>(name: string, data: unknown, token: string | null): Promise<T> {
  const r = await call<T>(name, data, token);
  if (!r.ok) throw new Error(`${name} failed: ${JSON.stringify(r.error)}`);
  return r.data;
}

function plain(value: unknown): unknown {
  if (value === null || typeof value !== "object") return value;
  if (typeof (value as { toMillis?: unknown }).toMillis === "function") return { ts: (value as { toMillis: () => number }).toMillis() };
  if (Array.isArray(value)) return value.map(plain);
  if ("firestore" in value && typeof (value as DocumentReference).path === "string") return { ref: (value as DocumentReference).path };
  return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, plain(v)]));
}

/** Every document in the database (any depth), path -> plain data. */
export async function snapshotDatabase(firestore: Firestore = db()): Promise<Map<string, unknown>> {
  const out = new Map<string, unknown>();
  const walk = async (cols: { listDocuments: () => Promise<DocumentReference[]> }[]) => {
    for (const col of cols) {
      for (const ref of await col.listDocuments()) {
        const snap = await ref.get();
        if (snap.exists) out.set(ref.path, plain(snap.data()));
        await walk(await ref.listCollections());
      }
    }
  };
  await walk(await firestore.listCollections());
  return out;
}

/**
 * The stored ledger in commit order (each entry document's create time; ids break ties), with every chain's
 * head. Ids order entries chain by chain, and a call's entries land in whichever chains their subjects hash
 * to, so only the commit order makes "the last entry" or "the entries since" mean what a test says.
 */
export async function readChain(): Promise<{ entries: { docId: string; entry: ChainedEvidence }[]; heads: Map<string, ChainHead> }> {
  const snap = await db().collection("deletionAudits").get();
  const docs = [...snap.docs].sort((a, b) => a.createTime.seconds - b.createTime.seconds || a.createTime.nanoseconds - b.createTime.nanoseconds || (a.id < b.id ? -1 : 1));
  return { entries: docs.map((d) => ({ docId: d.id, entry: d.data() as ChainedEvidence })), heads: await readHeads() };
}

/** The ledger verified as `retention verify-evidence` does: chains, heads, MACs (the emulators' key) and anchors. */
export async function verifyStoredChain() {
  return verifyEvidence();
}

export async function evidenceActions(): Promise<string[]> {
  return (await readChain()).entries.map((e) => e.entry.action);
}

export const docData = async (path: string): Promise<Record<string, unknown>> => (await db().doc(path).get()).data() ?? {};
