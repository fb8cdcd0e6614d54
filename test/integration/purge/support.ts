/**
 * Shared set-up for the purge suites: governed documents written with the registry's retention, deletion
 * requests opened through the real request code, holds placed through the real hold code, and readers for
 * the evidence chain and the purge's records.
 */
import { FieldPath } from "firebase-admin/firestore";
import { expect } from "vitest";
import { deletedWhileHeld, entryDocId, shardOf, type ChainedEvidence } from "../../../functions/src/evidence/rules";
import { hashCanonical } from "../../../functions/src/kernel/canonical";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { verifyEvidence } from "../../../functions/src/evidence/verify";
import { placeHold } from "../../../functions/src/holds/service";
import { settings } from "../../../functions/src/platform/settings";
import { policy } from "../../../functions/src/platform/registry";
import { openDeletionRequest } from "../../../functions/src/requests/service";
import type { PurgeRunOptions } from "../../../functions/src/purge/job";
import { descendantsQuery } from "../../../functions/src/platform/kindless";
import { clearAuth, clearFirestore, db } from "../../helpers/emulator";
import { putGoverned, T0 } from "./governed-write";

export { putGoverned, T0, type PutOptions } from "./governed-write";
import { parseObjectPath } from "../../../functions/src/kernel/storage-map";
import { readObject } from "../../../functions/src/platform/storage";

/**
 * The purge suites run on a named database of their own. That proves the engine follows
 * RETENTION_DATABASE_ID, and it keeps them clear of the functions emulator's triggers (bound to the
 * default database), which would otherwise answer every delete of a reset with evidence of their own,
 * arriving while the next test runs. `fan-out-task-queue.test.ts` switches back to the default database,
 * the one the emulated purgeChunk function uses.
 */
export const PURGE_TEST_DATABASE = "purge-tests";
useDatabase(PURGE_TEST_DATABASE);

export function useDatabase(databaseId: string): void {
  process.env.RETENTION_DATABASE_ID = databaseId;
}

/** The user-delete grace is 7 days: the purge runs as of a day after it. */
export const AFTER_GRACE = T0 + 8 * DAY_MS;

export async function reset(): Promise<void> {
  await clearFirestore(settings.databaseId());
  await clearAuth();
}

/** A session with one token child (the nested-data rule: the token carries the session's expiry). */
export async function putSession(id: string, uid: string, ageDays: number, tenantId = "t-acme"): Promise<void> {
  const { expireAtMs } = await putGoverned(`sessions/${id}`, { uid }, { ageDays, tenantId });
  await putGoverned(`sessions/${id}/tokens/tk-${id}`, { kind: "refresh" }, { ageDays, tenantId, parentExpireAtMs: expireAtMs });
}

/** A customer of a tenant with a profile, an order (masked on erasure) with messages, directory and activity. */
export async function putCustomer(uid: string, opts: { tenantId?: string; messages?: number; activity?: number } = {}): Promise<string[]> {
  const tenantId = opts.tenantId ?? "t-acme";
  const paths: string[] = [];
  const put = async (path: string, data: Record<string, unknown>, ageDays = 5) => {
    await putGoverned(path, data, { tenantId, ageDays });
    paths.push(path);
  };
  await put(`tenants/${tenantId}`, { name: `Tenant ${tenantId}` });
  await put(`tenants/${tenantId}/users/${uid}`, { uid, displayName: `Customer ${uid}` });
  await put(`tenants/${tenantId}/orders/o-${uid}`, { customerId: uid, customerName: `Customer ${uid}`, shippingAddress: "1 Road", status: "PAID", totalMinor: 100 });
  for (let m = 0; m < (opts.messages ?? 2); m++) {
    await put(`tenants/${tenantId}/orders/o-${uid}/messages/m-${uid}-${m}`, { authorId: uid, text: `message ${m}` });
  }
  await put(`userDirectory/${uid}`, { uid, tenantId });
  for (let a = 0; a < (opts.activity ?? 2); a++) await put(`activity/a-${uid}-${String(a).padStart(2, "0")}`, { subjectUid: uid, type: "SIGNED_IN" });
  return paths;
}

/** Opens a deletion request through the real request code (which soft-deletes the subject's data). */
export async function requestDeletion(uid: string, tenantId = "t-acme", nowMs = T0): Promise<string> {
  const { request } = await openDeletionRequest({ subject: { type: "user", uid, tenantId }, source: "user", actor: { type: "user", id: uid }, nowMs });
  return request.requestId;
}

export async function hold(targetPath: string, nowMs = T0): Promise<string> {
  const { holdId } = await placeHold({ targetPath, reasonCode: "LITIGATION", releaseAfterMs: null, actor: { type: "staff", id: "c-2001" }, nowMs });
  return holdId;
}

export function runOptions(over: Partial<PurgeRunOptions> = {}): PurgeRunOptions {
  return {
    nowMs: AFTER_GRACE,
    asOfMs: AFTER_GRACE,
    dryRun: false,
    actor: { type: "system", id: "nightlyPurge" },
    correlationId: "test",
    batchSize: 2,
    leaseMs: 60_000,
    ...over,
  };
}

export async function exists(path: string): Promise<boolean> {
  return (await db().doc(path).get()).exists;
}

/** Every document under the governed top-level collections, at any depth (control plane excluded). */
export async function allGovernedPaths(): Promise<Set<string>> {
  // One kindless all-descendants query over the whole database: unlike walking down from the documents that exist,
  // it also lists a document under a parent that was deleted, so an assertion that something is gone cannot pass by
  // not looking.
  const roots = new Set(["tenants", "userDirectory", "activity", "sessions", "events", "auditRecords"]);
  const snap = await descendantsQuery(null).select(FieldPath.documentId()).get();
  return new Set(snap.docs.map((d) => d.ref.path).filter((p) => roots.has(p.split("/")[0]!)));
}

/** Every evidence entry, chain by chain, each chain in seq order (its commit order). */
export async function evidence(): Promise<ChainedEvidence[]> {
  const snap = await db().collection("deletionAudits").orderBy(FieldPath.documentId()).get();
  return snap.docs.map((d) => d.data() as ChainedEvidence);
}

/** The ledger verifies as `retention verify-evidence` checks it (chains, heads, MACs, anchors); returns its entries. */
export async function expectChainVerifies(): Promise<ChainedEvidence[]> {
  const r = await verifyEvidence();
  expect(r.findings).toEqual([]);
  expect(r.ok).toBe(true);
  expect(r.macs).toBe("checked");
  return evidence();
}

/**
 * `a` committed before `b`: in seq order when both are in one chain; across chains (a purge batch appends to a
 * chain of its own) by the database's commit order of the two entries ({@link committedBefore}).
 */
export async function expectBefore(a: ChainedEvidence, b: ChainedEvidence): Promise<void> {
  if (shardOf(a) === shardOf(b)) expect(a.seq, `${entryDocId(a)} before ${entryDocId(b)}`).toBeLessThan(b.seq);
  else expect(await committedBefore(a, b), `${entryDocId(a)} committed before ${entryDocId(b)}`).toBe(true);
}

/** The hold fence generation an entry recorded (a purge step the one it read, a placement or release the one it wrote). */
export function fenceGenerationOf(e: ChainedEvidence): number {
  const g = e.detail?.fenceGeneration;
  expect(typeof g, `${e.action} ${entryDocId(e)} records its hold fence generation`).toBe("number");
  return g as number;
}

/** How many times each path appears in evidence entries of `action`. */
export function pathCounts(entries: readonly ChainedEvidence[], action: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const e of entries) if (e.action === action) for (const p of e.paths ?? []) m.set(p, (m.get(p) ?? 0) + 1);
  return m;
}

/** Every deleted path is in PURGE_BATCH evidence exactly once, and PURGE_BATCH names nothing that still exists. */
export async function expectDeletionsExplained(entries: readonly ChainedEvidence[], deleted: Iterable<string>): Promise<void> {
  const counts = pathCounts(entries, "PURGE_BATCH");
  for (const p of deleted) expect(counts.get(p), `${p} in PURGE_BATCH evidence`).toBe(1);
  for (const [p, n] of counts) {
    expect(n, `${p} recorded once`).toBe(1);
    expect(await exists(p), `${p} is recorded as deleted`).toBe(false);
  }
  for (const e of entries.filter((x) => x.action === "PURGE_BATCH")) {
    expect(e.decision.reason).toBe("AUTHORIZED_BY_POLICY");
    expect(e.policyVersion).toBe(policy().version);
    expect(typeof e.manifestHash).toBe("string");
    expect(e.counts?.deleted).toBe(e.paths?.length);
    expect(e.actor.type).toBe("system");
  }
}

/**
 * No hard delete without a recorded decision: every PURGE_BATCH entry names its batch record, and that record
 * (written by the plan before the round started) lists each deleted path with the version it was decided
 * on, hashes to the hash the entry carries, and was decided no later than the delete; the unit's
 * PURGE_DECIDED entry for that round comes first in the chain. Returns how many deletions were checked.
 */
export async function expectBatchesDecided(entries: readonly ChainedEvidence[]): Promise<number> {
  let checked = 0;
  for (const e of entries.filter((x) => x.action === "PURGE_BATCH")) {
    const detail = e.detail as { unitKey?: string; round?: number; batch?: string; batchHash?: string };
    const rec = (await db().doc(`retentionJobs/purge-${detail.unitKey}/batches/${detail.batch}`).get()).data() as
      | { planId: string; stage: string; seq: number; hash: string; items: { path: string; version?: string }[]; decision: { decidedAtMs: number } }
      | undefined;
    expect(rec, `batch record ${detail.batch} of ${detail.unitKey}`).toBeDefined();
    const items = rec!.items;
    expect(hashCanonical({ unitKey: detail.unitKey, planId: rec!.planId, stage: rec!.stage, seq: rec!.seq, items })).toBe(detail.batchHash);
    expect(rec!.hash).toBe(detail.batchHash);
    const planned = new Set(items.map((i) => i.path));
    for (const p of e.paths ?? []) {
      expect(planned.has(p), `${p} is in its batch record`).toBe(true);
      checked++;
    }
    expect(rec!.decision.decidedAtMs).toBeLessThanOrEqual(e.atMs);
    const decided = entries.find((x) => x.action === "PURGE_DECIDED" && (x.detail as { unitKey?: string }).unitKey === detail.unitKey && (x.detail as { round?: number }).round === detail.round);
    expect(decided, `PURGE_DECIDED of ${detail.unitKey} round ${detail.round}`).toBeDefined();
    // Batches append to chains of their own (purge/rules/unit.ts#batchEvidenceKey): seqs of different chains do
    // not compare, so the order is the database's commit order of the two entries.
    expect(await committedBefore(decided!, e), `PURGE_DECIDED of ${detail.unitKey} committed before its batch`).toBe(true);
  }
  return checked;
}

/**
 * Whether entry `a` committed before entry `b`, by the create times of their documents: the one order that
 * holds across the ledger's chains (a seq orders entries of one chain only).
 */
export async function committedBefore(a: ChainedEvidence, b: ChainedEvidence): Promise<boolean> {
  const [sa, sb] = await db().getAll(db().collection("deletionAudits").doc(entryDocId(a)), db().collection("deletionAudits").doc(entryDocId(b)));
  const ta = sa?.createTime;
  const tb = sb?.createTime;
  if (!ta || !tb) throw new Error(`entry ${entryDocId(ta ? b : a)} does not exist`);
  return ta.seconds < tb.seconds || (ta.seconds === tb.seconds && ta.nanoseconds < tb.nanoseconds);
}

/** A deterministic PRNG (mulberry32) so a failing seed can be replayed. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class InjectedCrash extends Error {
  constructor(where: string) {
    super(`injected crash at ${where}`);
    this.name = "InjectedCrash";
  }
}

/** A hold's placement and release as the ledger records them: the fence generations they wrote. */
export interface PlacedHold {
  holdId: string;
  generation: number;
  releasedGeneration: number | null;
  targetPath: string;
  /** Its HOLD_PLACED entry. */
  placed: ChainedEvidence;
}

/** One object an object batch deleted, as its PURGE_OBJECTS entry names it. */
export interface ObjectDeletion {
  path: string;
  generation: string;
  /** The hold fence generation the window's decision read. */
  decidedGeneration: number;
  window: string | null;
  entry: ChainedEvidence;
}

/** Every object deletion the ledger records (`gs://bucket/name#generation deleted` lines of PURGE_OBJECTS entries). */
export function objectDeletions(entries: readonly ChainedEvidence[]): ObjectDeletion[] {
  const out: ObjectDeletion[] = [];
  for (const e of entries.filter((x) => x.action === "PURGE_OBJECTS")) {
    for (const line of String(e.detail?.objects ?? "").split("\n")) {
      const m = /^(gs:\/\/.+)#([0-9]+) deleted$/.exec(line);
      if (m) out.push({ path: m[1]!, generation: m[2]!, decidedGeneration: fenceGenerationOf(e), window: typeof e.detail?.window === "string" ? e.detail.window : null, entry: e });
    }
  }
  return out;
}

/**
 * The delete-window protocol, read from the ledger (docs/HOLD-FENCE.md, "Cloud Storage objects"): for every hold and
 * every object it covers (`objects`: each object's path and heldWith document, as they were before the purge), the
 * object was deleted on a decision made before the hold (the fence generation that decision read is older than the
 * placement's), and the deletion's evidence committed before the hold's HOLD_PLACED, or the placement found its
 * delete window and waited for it (HOLD_PLACED names the window); or it was not deleted while the hold stood, and it
 * is still there. Returns how many covered objects were checked.
 */
export async function expectObjectsFenced(entries: readonly ChainedEvidence[], objects: ReadonlyMap<string, string>): Promise<number> {
  if (objects.size === 0) return 0;
  const deletions = objectDeletions(entries);
  let checked = 0;
  for (const h of await placedHolds(entries)) {
    const waited = new Set(String(h.placed.detail?.windows ?? "").split(",").filter((w) => w !== ""));
    for (const [path, heldWith] of objects) {
      if (heldWith !== h.targetPath && !heldWith.startsWith(`${h.targetPath}/`)) continue;
      checked++;
      const deleted = deletions.filter((d) => d.path === path);
      if (deleted.length === 0) {
        const ref = parseObjectPath(path)!;
        expect(await readObject(ref.bucket, ref.name), `${path}, held with ${heldWith} under hold ${h.holdId}, survives`).not.toBeNull();
        continue;
      }
      for (const d of deleted) {
        expect(
          deletedWhileHeld(d.decidedGeneration, h.generation, h.releasedGeneration),
          `${path}#${d.generation} deleted on a decision at fence generation ${d.decidedGeneration} while hold ${h.holdId} on ${h.targetPath} stood (generations ${h.generation}..${h.releasedGeneration ?? "now"})`,
        ).toBe(false);
        if (d.decidedGeneration >= h.generation) continue;
        const ordered = (await committedBefore(d.entry, h.placed)) || (d.window !== null && waited.has(d.window));
        expect(ordered, `${path}#${d.generation} (window ${d.window ?? "-"}) deleted before hold ${h.holdId}'s HOLD_PLACED, or in a window the placement waited for`).toBe(true);
      }
    }
  }
  return checked;
}

/** Every HOLD_PLACED entry, with the target path from its hold record and the generation of its HOLD_RELEASED. */
export async function placedHolds(entries: readonly ChainedEvidence[]): Promise<PlacedHold[]> {
  const out: PlacedHold[] = [];
  for (const e of entries.filter((x) => x.action === "HOLD_PLACED")) {
    const rec = await db().doc(`retentionHolds/${e.holdId}`).get();
    const released = entries.find((x) => x.action === "HOLD_RELEASED" && x.holdId === e.holdId);
    out.push({ holdId: String(e.holdId), generation: fenceGenerationOf(e), releasedGeneration: released ? fenceGenerationOf(released) : null, targetPath: String(rec.get("targetPath")), placed: e });
  }
  return out;
}

/**
 * The hold fence, read from the evidence (which commits with each deletion): for every hold, each path it
 * covers that existed before the purge was either deleted by a PURGE_BATCH outside the hold's life, or still
 * exists. And the purge never says a path was stopped by a hold when the path is gone.
 *
 * "Outside the hold's life" is decided by the hold fence generation, the ledger's order across chains: a purge
 * batch records the generation it read in the transaction that deleted, a placement and a release the one they
 * wrote, and Firestore serialises the fence's readers against its writers, so a batch that read r committed
 * before a placement that wrote g exactly when r < g (evidence/rules.ts#deletedWhileHeld). It is the same
 * "before" the single chain's seq gave, without needing one chain. Returns how many covered paths were checked.
 */
export async function expectHoldsFenced(entries: readonly ChainedEvidence[], before: ReadonlySet<string>, objects: ReadonlyMap<string, string> = new Map()): Promise<number> {
  const deletedAt = new Map<string, { generation: number; id: string }>();
  for (const e of entries) if (e.action === "PURGE_BATCH") for (const p of e.paths ?? []) deletedAt.set(p, { generation: fenceGenerationOf(e), id: entryDocId(e) });
  let checked = 0;
  for (const h of await placedHolds(entries)) {
    for (const p of before) {
      if (p !== h.targetPath && !p.startsWith(`${h.targetPath}/`)) continue;
      checked++;
      const deleted = deletedAt.get(p);
      if (deleted === undefined) expect(await exists(p), `${p}, covered by hold ${h.holdId} on ${h.targetPath}, survives`).toBe(true);
      else {
        expect(
          deletedWhileHeld(deleted.generation, h.generation, h.releasedGeneration),
          `${p} deleted (${deleted.id}, fence generation ${deleted.generation}) while hold ${h.holdId} on ${h.targetPath} stood (generations ${h.generation}..${h.releasedGeneration ?? "now"})`,
        ).toBe(false);
      }
    }
  }
  checked += await expectObjectsFenced(entries, objects);
  // A path recorded as stopped by a hold is still there, unless a later round deleted it (after a release).
  for (const e of entries.filter((x) => x.action === "PURGE_HOLD_STOPPED")) {
    const stoppedAt = fenceGenerationOf(e);
    for (const p of e.paths ?? []) {
      const later = (deletedAt.get(p)?.generation ?? -1) > stoppedAt;
      if (!later) expect(await exists(p), `${p} recorded as stopped by a hold (${entryDocId(e)}) still exists`).toBe(true);
    }
  }
  return checked;
}
