import { DocumentReference, FieldValue, Timestamp, type DocumentData, type DocumentSnapshot, type Query, type Transaction } from "firebase-admin/firestore";
import { EVIDENCE_TX, openEvidence } from "../../evidence/index";
import { activeHoldsInTx, claimingHoldIds } from "../../holds/index";
import type { ActiveHoldRef } from "../../kernel/held";
import { COLLECTIONS, db } from "../../platform/firestore";
import { governedToFirestore, readGoverned, toTimestamp } from "../../platform/governed-doc";
import { toPlain } from "../../platform/plain";
import { fenceLease, renewLeaseInTx } from "../../platform/lease";
import { log } from "../../platform/logs";
import { policy } from "../../platform/registry";
import { archiveClassOf, archiveIdFor, archiveManifestHash, archiveRetainUntil, archiveRetention, businessData, checkArchive, contentHash, type ArchiveEntry, type ArchiveProblem } from "../rules/archive";
import { canonicalJson } from "../../kernel/canonical";
import type { Subject } from "../../plan/rules";
import { DataKeys, isSealed, keyForSubject, keySubjectOf, openCopy, periodOf, seal, sealAad, shredMarkerRef, type DataKey, type KeySubject } from "../../shred/index";
import type { ArchiveCopies } from "../../requests/rules/gone-by";
import type { UnitCheckpoint } from "../store";
import { fire, purgeEvidence, type StepEnv } from "./env";

/**
 * The archive workflow (Firestore target, `archives/{archiveId}`; the rules deny every client):
 * 1. copy each source's business data, with a SHA-256 of its canonical JSON, and the archive's own retention
 *    (the `archives` collection's class, counted from the archiving time; no expiry while held);
 * 2. read every copy back and compare: the copy's data must hash to the recorded hash, and that hash must
 *    equal the source's as read now;
 * 3. only then mark the copies verified (`verified`, `verifiedAt`, the archive manifest's hash), with
 *    evidence. Anything else is ARCHIVE_NOT_VERIFIED, and the caller deletes nothing.
 * The business data is sealed (AES-256-GCM, `sealed`) under its subject's data key (`dataKey`: the request's subject,
 * or for a sweep the document's scope; shred/keys.ts), never stored in the clear: the hash is of the plaintext, so
 * reading back means opening the seal (decision 0038).
 * Idempotent: archive ids derive from the source path and anchor, an existing copy is never overwritten
 * (a damaged one fails verification instead of being silently replaced).
 */

const ARCHIVE_SLICE = 100;

export const archiveRef = (archiveId: string): DocumentReference => db().collection(COLLECTIONS.archives).doc(archiveId);

/** The unit whose sources are archived, in the round about to start, with its lease. */
export type ArchiveUnit = Pick<UnitCheckpoint, "unitKey" | "round" | "requestId" | "manifestHash" | "policyVersion"> & {
  leaseRef: DocumentReference;
  /** The request's subject, whose data key seals its copies; null for a sweep (each document's scope's key). */
  subject: Subject | null;
};

export type ArchiveResult =
  | { ok: true; archives: Map<string, string>; manifestHash: string }
  | { ok: false; problems: { path: string; problem: ArchiveProblem }[] };

function archiveRecord(src: DocumentSnapshot, archiveId: string, holds: readonly ActiveHoldRef[], env: StepEnv, unit: ArchiveUnit, key: DataKey): Record<string, unknown> {
  const data = src.data() ?? {};
  const g = readGoverned(data);
  if (!g?.retentionClass) throw new Error(`archive source ${src.ref.path} carries no retention class`);
  const { source, ...r } = archiveRetention({
    archiveClass: archiveClassOf(policy()),
    archivedAtMs: env.nowMs,
    tenantId: g.tenantId,
    source: { retentionClass: g.retentionClass, createdAtMs: g.createdAtMs, retainUntilMs: g.retainUntilMs, expireAtMs: g.expireAtMs },
    // The active holds that claim the copy (those covering its source): a copy carries a hold only by its id,
    // and never the id of a hold that is being released (holds/rules.ts#claimingHoldIds).
    holdIds: claimingHoldIds(archiveRef(archiveId).path, holds, src.ref.path),
  });
  return {
    archiveId,
    sourcePath: src.ref.path,
    sha256: sourceHash(data),
    // The business data only as ciphertext; the hash above is of its plaintext (the canonical JSON sealed here).
    sealed: seal(key.key, canonicalJson(toPlain(businessData(data))), sealAad(archiveId, src.ref.path, key.ref)),
    dataKey: key.ref,
    ...governedToFirestore({ ...r, lifecycleState: "ARCHIVED", policyVersion: unit.policyVersion, preHold: null }, "set"),
    // The source's retention, for the record (the archive's own is above).
    source: {
      retentionClass: source.retentionClass,
      createdAt: toTimestamp(source.createdAtMs),
      ...(source.retainUntilMs !== null ? { retainUntil: toTimestamp(source.retainUntilMs) } : {}),
      ...(source.expireAtMs !== null ? { expireAt: toTimestamp(source.expireAtMs) } : {}),
    },
    archivedAt: toTimestamp(env.nowMs),
    archivedBy: { type: env.actor.type, id: env.actor.id },
    unitKey: unit.unitKey,
    verified: false,
  };
}

/** How often a slice is tried again after the shred's marker turned up on one of its keys (each time with a new generation). */
const MARKED_KEY_RETRIES = 3;

/**
 * Step 1: writes the missing copies, a slice per transaction, each with its evidence. The transaction reads the shred
 * markers of the keys it seals under, in the same round trip as the sources: a key generation the shred has decided
 * to destroy seals nothing (its copy would be born unreadable); the slice is tried again under the next generation.
 */
async function writeCopies(unit: ArchiveUnit, paths: readonly string[], env: StepEnv): Promise<{ entries: ArchiveEntry[]; keyRefs: string[] }> {
  const entries: ArchiveEntry[] = [];
  // Every copy this run writes ends in the same period: the archive class's duration from now.
  const period = periodOf(archiveRetainUntil(archiveClassOf(policy()), env.nowMs));
  const keys = new Map<string, DataKey>();
  // Per subject, the generation the shred's marker was found on: never handed out again by this run.
  const marked = new Map<string, number>();
  const nameOf = (subject: KeySubject) => `${subject.kind}:${subject.id}`;
  const keyOf = async (subject: KeySubject): Promise<DataKey> => {
    const name = nameOf(subject);
    const hit = keys.get(name);
    if (hit) return hit;
    const key = await keyForSubject(subject, period, env.nowMs, marked.get(name));
    keys.set(name, key);
    return key;
  };
  const subjectFor = (data: DocumentData | undefined): KeySubject => keySubjectOf(unit.subject, readGoverned(data ?? {})?.tenantId ?? "");
  for (let i = 0; i < paths.length; i += ARCHIVE_SLICE) {
    const slice = paths.slice(i, i + ARCHIVE_SLICE);
    for (let attempt = 0; ; attempt++) {
      const result = await writeSlice(unit, slice, env, keyOf, (s) => keys.get(nameOf(subjectFor(s.data()))), subjectFor);
      if (result.ok) {
        entries.push(...result.entries);
        break;
      }
      if (attempt >= MARKED_KEY_RETRIES) throw new Error(`DATA_KEY_CONTENTION: the shred kept deciding on the data keys of ${unit.unitKey}'s copies (${result.marked.map((k) => k.ref).join(", ")})`);
      for (const [name, k] of [...keys]) {
        if (!result.marked.includes(k)) continue;
        marked.set(name, k.generation);
        keys.delete(name);
      }
      log.warn("purge.archive.key_marked", { unitKey: unit.unitKey, keys: result.marked.map((k) => k.ref) });
    }
  }
  return { entries, keyRefs: [...new Set([...keys.values()].map((k) => k.ref))] };
}

type SliceResult = { ok: true; entries: ArchiveEntry[] } | { ok: false; marked: DataKey[] };

async function writeSlice(
  unit: ArchiveUnit,
  slice: readonly string[],
  env: StepEnv,
  keyOf: (subject: KeySubject) => Promise<DataKey>,
  currentKey: (source: DocumentSnapshot) => DataKey | undefined,
  subjectFor: (data: DocumentData | undefined) => KeySubject,
): Promise<SliceResult> {
  // The data keys first (the key store is another database): one per subject of the slice, as the sources read now.
  const pre = await db().getAll(...slice.map((p) => db().doc(p)));
  const sliceKeys = new Map<string, DataKey>();
  for (const s of pre) if (s.exists) sliceKeys.set(s.ref.path, await keyOf(subjectFor(s.data())));
  const used = [...new Set(sliceKeys.values())];
  return db().runTransaction(async (tx): Promise<SliceResult> => {
    await fenceLease(tx, unit.leaseRef, env.holder);
    const read = await tx.getAll(...slice.map((p) => db().doc(p)), ...used.map((k) => shredMarkerRef(k.dataKeyId, k.generation)));
    // A marker on a key: the shred decided on it (its decision transaction read the key's copies and wrote the marker,
    // which this transaction has now read, so the two are serialized). Nothing is written under it.
    const marked = used.filter((_, j) => read[slice.length + j]!.exists);
    if (marked.length > 0) return { ok: false, marked };
    const sources = read.slice(0, slice.length).filter((s) => s.exists);
    const ids = sources.map((s) => archiveIdFor(s.ref.path, readGoverned(s.data())?.createdAtMs ?? 0));
    const archives = ids.length > 0 ? await tx.getAll(...ids.map(archiveRef)) : [];
    const holds = await activeHoldsInTx(tx);
    const evidence = await openEvidence(tx, unit.unitKey);
    const created: string[] = [];
    const out: ArchiveEntry[] = [];
    sources.forEach((s, k) => {
      const archiveId = ids[k]!;
      out.push({ sourcePath: s.ref.path, archiveId, sha256: sourceHash(s.data() ?? {}) });
      if (archives[k]!.exists) return;
      const key = sliceKeys.get(s.ref.path);
      // A source that appeared or changed scope since the keys were fetched is left for the next run: no copy, no delete.
      if (!key || key !== currentKey(s)) return;
      tx.create(archiveRef(archiveId), archiveRecord(s, archiveId, holds, env, unit, key));
      created.push(s.ref.path);
    });
    renewLeaseInTx(tx, unit.leaseRef, env.holder);
    if (created.length > 0) {
      evidence.append(
        purgeEvidence(env, unit, {
          action: "ARCHIVE_CREATED",
          decision: { reason: "ARCHIVE_REQUIRED_BY_POLICY" },
          paths: created,
          counts: { created: created.length },
        }),
      );
    }
    return { ok: true, entries: out };
  }, EVIDENCE_TX);
}

/**
 * Steps 2 and 3 for one slice, in one transaction: read back, compare, and mark verified only when every
 * copy of the slice checks out.
 */
async function verifySlice(
  unit: ArchiveUnit,
  slice: readonly ArchiveEntry[],
  manifestHash: string,
  env: StepEnv,
  keys: DataKeys,
): Promise<{ path: string; problem: ArchiveProblem }[]> {
  return db().runTransaction(async (tx: Transaction) => {
    await fenceLease(tx, unit.leaseRef, env.holder);
    const sources = await tx.getAll(...slice.map((e) => db().doc(e.sourcePath)));
    const archives = await tx.getAll(...slice.map((e) => archiveRef(e.archiveId)));
    const problems: { path: string; problem: ArchiveProblem }[] = [];
    for (const [k, e] of slice.entries()) {
      const problem = await verifyArchiveSnapshot(sources[k]!, archives[k]!, keys);
      if (problem) problems.push({ path: e.sourcePath, problem });
    }
    if (problems.length > 0) return problems;
    const evidence = await openEvidence(tx, unit.unitKey);
    for (const e of slice) {
      tx.update(archiveRef(e.archiveId), { verified: true, verifiedAt: toTimestamp(env.nowMs), archiveManifestHash: manifestHash });
    }
    renewLeaseInTx(tx, unit.leaseRef, env.holder);
    evidence.append(
      purgeEvidence(env, unit, {
        action: "ARCHIVE_VERIFIED",
        decision: { reason: "ARCHIVE_HASHES_MATCH" },
        paths: slice.map((e) => e.sourcePath),
        counts: { verified: slice.length },
        detail: { archiveManifestHash: manifestHash },
      }),
    );
    return [];
  }, EVIDENCE_TX);
}

/** Archives and verifies the sources of a unit that need an archive. Nothing is deleted here. */
export async function archiveAndVerify(unit: ArchiveUnit, paths: readonly string[], env: StepEnv): Promise<ArchiveResult> {
  const { entries, keyRefs } = await writeCopies(unit, paths, env);
  await fire(env, { point: "afterArchiveWrite", unitKey: unit.unitKey, round: unit.round, step: null, batch: null, paths: entries.map((e) => archiveRef(e.archiveId).path) });
  const manifestHash = archiveManifestHash(entries);
  const problems: { path: string; problem: ArchiveProblem }[] = [];
  // The keys the copies were sealed with, opened from the key store before the read-back's transactions (no KMS call
  // while they hold their locks); a copy from an earlier run under another key is opened in its transaction.
  const keys = new DataKeys();
  await Promise.all(keyRefs.map((r) => keys.open(r)));
  for (let i = 0; i < entries.length; i += ARCHIVE_SLICE) {
    problems.push(...(await verifySlice(unit, entries.slice(i, i + ARCHIVE_SLICE), manifestHash, env, keys)));
  }
  // A source missing from the entries disappeared before it could be archived: nothing to delete there.
  if (problems.length > 0) {
    log.error("purge.archive.unverified", { unitKey: unit.unitKey, failed: problems.length, problems: [...new Set(problems.map((p) => p.problem))].sort() });
    return { ok: false, problems };
  }
  log.info("purge.archive.verified", { unitKey: unit.unitKey, verified: entries.length });
  return { ok: true, archives: new Map(entries.map((e) => [e.sourcePath, e.archiveId])), manifestHash };
}

/** The archive copies a purge unit made (each carries its unit's key; a request's unit key is its id). */
const copiesOf = (unitKey: string): Query => db().collection(COLLECTIONS.archives).where("unitKey", "==", unitKey);

/**
 * What a request's erasure archived, for its "fully gone by" date: whether it made any copy, the latest end of
 * retention among them, and whether one is held. Three reads of one document at most, however many copies a
 * tenant's closure made (indexes: unitKey with retainUntil descending; unitKey with legalHold by merge). Read in
 * `tx` when one is given.
 */
export async function archiveCopiesOf(unitKey: string, tx?: Transaction): Promise<ArchiveCopies> {
  const get = (q: Query) => (tx ? tx.get(q) : q.get());
  const [any, latest, held] = await Promise.all([
    get(copiesOf(unitKey).select().limit(1)),
    get(copiesOf(unitKey).orderBy("retainUntil", "desc").select("retainUntil", "dataKey").limit(1)),
    get(copiesOf(unitKey).where("legalHold", "==", true).select().limit(1)),
  ]);
  const end = latest.docs[0]?.get("retainUntil") as unknown;
  // A unit's copies are sealed together (one run, one key): the latest one says whether they are.
  const sealed = typeof latest.docs[0]?.get("dataKey") === "string";
  return { any: !any.empty, latestRetainUntilMs: end instanceof Timestamp ? end.toMillis() : null, held: !held.empty, sealed };
}

/** Whether an archive copy of the unit is still in the database, read in the caller's transaction. */
export async function archiveCopyLeftInTx(tx: Transaction, unitKey: string): Promise<boolean> {
  return !(await tx.get(copiesOf(unitKey).select().limit(1))).empty;
}

/**
 * Holds win for every copy: when a hold stops a source's purge, its archive takes the hold too (flag, the ids
 * of the active holds that claim it, no expiry), so the hold's release finds the copy by its id and gives it its
 * expiry back. A source held only by marks that no active hold answers to leaves the copy as it is: a copy never
 * carries a hold without the hold's id. Written in the caller's transaction; `archive` must have been read in it,
 * and `holds` are the active holds of the fence generation that transaction read.
 */
export function holdArchiveInTx(tx: Transaction, archive: DocumentSnapshot, holds: readonly ActiveHoldRef[]): void {
  if (!archive.exists) return;
  const sourcePath = archive.get("sourcePath") as unknown;
  const ids = claimingHoldIds(archive.ref.path, holds, typeof sourcePath === "string" ? sourcePath : null);
  if (ids.length === 0) return;
  tx.update(archive.ref, { legalHold: true, holdIds: FieldValue.arrayUnion(...ids), expireAt: FieldValue.delete() });
}


export { toPlain } from "../../platform/plain";

/** SHA-256 of a source document's business data (retention fields excluded), in plain form. */
export function sourceHash(data: DocumentData): string {
  return contentHash(toPlain(businessData(data)));
}

/**
 * SHA-256 of an archive's stored copy, as read back now: of the plaintext its seal opens to (null when it does not
 * open: its key is shredded or missing, or the seal was altered), or of a copy still in the clear (`data`, from before
 * the copies were sealed; the backfill seals them).
 */
export async function archivedDataHash(archive: DocumentData | undefined, archiveId: string, keys: DataKeys): Promise<string | null> {
  if (archive && isSealed(archive.sealed)) {
    const opened = await openCopy(archive, archiveId, keys);
    return opened.ok ? contentHash(opened.plain) : null;
  }
  const copy = archive?.data as Record<string, unknown> | undefined;
  return copy && typeof copy === "object" ? contentHash(toPlain(copy)) : null;
}

/** Read-back verification of one archive against its source (both as read now). */
export async function verifyArchiveSnapshot(source: DocumentSnapshot, archive: DocumentSnapshot, keys: DataKeys): Promise<ArchiveProblem | null> {
  const src = source.data();
  if (!src) return "SOURCE_CHANGED";
  const a = archive.data();
  return checkArchive(
    { sourcePath: source.ref.path, sha256: sourceHash(src) },
    {
      exists: archive.exists,
      sourcePath: typeof a?.sourcePath === "string" ? a.sourcePath : null,
      recordedSha256: typeof a?.sha256 === "string" ? a.sha256 : null,
      dataSha256: await archivedDataHash(a, archive.id, keys),
    },
  );
}
