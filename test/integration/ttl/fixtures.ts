/**
 * Fixtures for the TTL suites: governed documents written as stored data (the states a test needs, such as
 * an expired session or a held event with a stray TTL value), and evidence/marker lookups by path.
 */
import type { DocumentData, DocumentSnapshot } from "firebase-admin/firestore";
import type { GovernedFields } from "../../../functions/src/kernel/governed";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { COLLECTIONS, db } from "../../../functions/src/platform/firestore";
import { governedToFirestore } from "../../../functions/src/platform/governed-doc";
import { policy } from "../../../functions/src/platform/registry";
import { readHeads } from "../../../functions/src/evidence/anchor";
import type { ChainedEvidence } from "../../../functions/src/evidence/rules";

export const TENANT = "t-acme";

/** Stores a governed document exactly as given (no write helper: tests need states the helper refuses to make). */
export async function putGoverned(path: string, data: DocumentData, over: Partial<GovernedFields> = {}): Promise<void> {
  const cls = policy().classForPath(path);
  if (!cls) throw new Error(`fixture ${path} is in no class`);
  const createdAtMs = over.createdAtMs ?? Date.now() - 31 * DAY_MS;
  const g: GovernedFields = {
    retentionClass: cls.id,
    lifecycleState: "ACTIVE",
    tenantId: TENANT,
    policyVersion: policy().version,
    createdAtMs,
    expireAtMs: null,
    retainUntilMs: null,
    legalHold: false,
    holdIds: [],
    preHold: null,
    ...over,
  };
  await db().doc(path).set({ ...data, ...governedToFirestore(g, "set") });
}

/** An expired session (the sweeper may take it) with `tokens` children carrying the same expiry. */
export async function putExpiredSession(sessionId: string, tokens: number, expireAtMs = Date.now() - DAY_MS): Promise<string[]> {
  await putGoverned(`sessions/${sessionId}`, { uid: "u-1001" }, { expireAtMs });
  const paths: string[] = [];
  for (let i = 0; i < tokens; i++) {
    const p = `sessions/${sessionId}/tokens/tk-${String(i).padStart(3, "0")}`;
    await putGoverned(p, { kind: "refresh" }, { expireAtMs });
    paths.push(p);
  }
  return paths;
}

export async function evidenceByPath(path: string): Promise<ChainedEvidence[]> {
  const snap = await db().collection(COLLECTIONS.deletionAudits).where("paths", "array-contains", path).get();
  return snap.docs.map((d) => d.data() as ChainedEvidence);
}

export async function markersByPath(path: string): Promise<DocumentSnapshot[]> {
  return (await db().collection(COLLECTIONS.processedEvents).where("path", "==", path).get()).docs;
}

export async function existing(paths: string[]): Promise<string[]> {
  if (paths.length === 0) return [];
  const snaps = await db().getAll(...paths.map((p) => db().doc(p)));
  return snaps.filter((s) => s.exists).map((s) => s.ref.path);
}

/** Entries appended to the ledger so far: the sum of every chain head's seq. */
export async function chainHeadSeq(): Promise<number> {
  let n = 0;
  for (const head of (await readHeads()).values()) n += head.seq;
  return n;
}

/** The event a trigger gets for a delete: the deleted document's last snapshot (data, path, version), its params and an id. */
export function deleteEvent(snap: DocumentSnapshot, id: string, params: Record<string, string>, time = new Date().toISOString()) {
  return { id, time, data: { data: () => snap.data(), ref: { path: snap.ref.path }, updateTime: snap.updateTime }, params };
}
