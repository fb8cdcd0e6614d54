import { FieldPath, FieldValue, Timestamp, type DocumentData, type DocumentReference } from "firebase-admin/firestore";
import type { Actor } from "../kernel/actor";
import { canonicalJson, hashCanonical } from "../kernel/canonical";
import { EVIDENCE_TX, openEvidence } from "../evidence/index";
import { COLLECTIONS, db } from "../platform/firestore";
import { log } from "../platform/logs";
import { toPlain } from "../platform/plain";
import { subjectFromRecord } from "../requests/rules/requests";
import { policy } from "../platform/registry";
import { keyForSubject, shredMarkerRef, type DataKey } from "./keys";
import { isSealed, keySubjectOf, periodOf, seal, sealAad, type KeySubject } from "./rules";

/**
 * The migration of archive copies written in the clear (before decision 0038) to sealed ones, run by the expiry
 * backfill. Resumable: it walks `archives` in id order a page at a time; each page is one transaction that re-reads
 * the page, seals each copy still in the clear whose data still matches its recorded hash (`sealed`, `dataKey`, and
 * `data` deleted), appends ARCHIVE_SEALED evidence and moves the cursor in `retentionJobs/archiveSealMigration`, so a
 * crash loses at most the page that did not commit and the next run resumes after the last one that did. A copy whose
 * data no longer matches its hash is left as it is (the audit reports it) rather than sealed as if it were intact.
 * Once a pass has reached the end it stays done: every copy written since is sealed when it is made.
 */
export const SEAL_MIGRATION_DOC = "archiveSealMigration";
const checkpointRef = () => db().collection(COLLECTIONS.retentionJobs).doc(SEAL_MIGRATION_DOC);

export interface SealMigrationOptions {
  nowMs: number;
  actor: Actor;
  dryRun?: boolean;
  correlationId?: string | null;
  /** Copies scanned by this run before it stops and keeps its cursor. */
  maxDocs?: number;
  pageSize?: number;
  /** Start a new pass even if the last one finished (after a restore brought copies in the clear back). */
  restart?: boolean;
  /** Called after each page committed (tests interrupt the migration here). */
  afterPage?: (after: string) => Promise<void>;
}

export interface SealMigrationSummary {
  scanned: number;
  sealed: number;
  /** Copies in the clear whose data no longer matches their recorded hash: left for a person (the audit's ARCHIVE_UNVERIFIED). */
  mismatched: number;
  done: boolean;
  resumed: boolean;
  pages: number;
}

/** Who a copy in the clear belongs to: its erasure request's subject, else (a sweep's copy, or no request left) its scope. */
async function subjectOfCopy(a: DocumentData): Promise<KeySubject> {
  const unitKey = typeof a.unitKey === "string" ? a.unitKey : "";
  const tenantId = typeof a.tenantId === "string" ? a.tenantId : "";
  const req = unitKey && !unitKey.startsWith("sweep-") ? (await db().collection(COLLECTIONS.deletionRequests).doc(unitKey).get()).data() : undefined;
  return keySubjectOf(req ? subjectFromRecord(req) : null, tenantId);
}

const inClear = (a: DocumentData | undefined): boolean => !!a && !isSealed(a.sealed) && !!a.data && typeof a.data === "object";

/** How often a page is tried again after the shred's marker turned up on one of its keys. */
const MARKED_KEY_RETRIES = 3;

type PageResult = { sealed: number; mismatched: number } | { marked: DataKey[] } | null;

/**
 * One page in one transaction: the cursor must still be where this run read the page (null: another run moved it),
 * and no key it seals under may carry the shred's marker (`marked`: nothing written).
 */
async function sealPage(opts: SealMigrationOptions, refs: DocumentReference[], keys: Map<string, DataKey>, after: string | null, last: string | null, end: boolean, first: boolean): Promise<PageResult> {
  const used = [...new Map([...keys.values()].map((k) => [k.ref, k])).values()];
  return db().runTransaction(async (tx): Promise<PageResult> => {
    const cp = (await tx.get(checkpointRef())).data();
    const cursor = typeof cp?.after === "string" ? cp.after : null;
    // Another run moved the cursor since this page was read: leave the page to it.
    if (cursor !== after && !(opts.restart && first)) return null;
    const read = refs.length + used.length > 0 ? await tx.getAll(...refs, ...used.map((k) => shredMarkerRef(k.dataKeyId, k.generation))) : [];
    const marked = used.filter((_, j) => read[refs.length + j]!.exists);
    if (marked.length > 0) return { marked };
    const snaps = read.slice(0, refs.length);
    const evidence = await openEvidence(tx, SEAL_MIGRATION_DOC);
    const sealedPaths: string[] = [];
    let mismatched = 0;
    for (const s of snaps) {
      const a = s.data();
      const key = keys.get(s.id);
      if (!inClear(a) || !key) continue;
      const plaintext = canonicalJson(toPlain(a!.data));
      if (hashCanonical(JSON.parse(plaintext)) !== a!.sha256 || typeof a!.sourcePath !== "string") {
        mismatched++;
        continue;
      }
      tx.update(s.ref, { sealed: seal(key.key, plaintext, sealAad(s.id, a!.sourcePath, key.ref)), dataKey: key.ref, data: FieldValue.delete() });
      sealedPaths.push(s.ref.path);
    }
    tx.set(checkpointRef(), { after: last, done: end, updatedAt: Timestamp.fromMillis(opts.nowMs), sealedTotal: FieldValue.increment(sealedPaths.length) }, { merge: true });
    if (sealedPaths.length > 0) {
      evidence.append({
        action: "ARCHIVE_SEALED",
        actor: opts.actor,
        decision: { reason: "ARCHIVE_PLAINTEXT_MIGRATED" },
        policyVersion: policy().version,
        atMs: opts.nowMs,
        correlationId: opts.correlationId ?? null,
        paths: sealedPaths,
        counts: { sealed: sealedPaths.length, mismatched },
      });
    }
    return { sealed: sealedPaths.length, mismatched };
  }, EVIDENCE_TX);
}

export async function sealPlaintextArchives(opts: SealMigrationOptions): Promise<SealMigrationSummary> {
  const maxDocs = opts.maxDocs ?? 2_000;
  const pageSize = opts.pageSize ?? 100;
  const start = (await checkpointRef().get()).data();
  const summary: SealMigrationSummary = { scanned: 0, sealed: 0, mismatched: 0, done: false, resumed: false, pages: 0 };
  if (start?.done === true && !opts.restart) return { ...summary, done: true };
  let after: string | null = opts.restart ? null : typeof start?.after === "string" ? start.after : null;
  summary.resumed = after !== null;
  while (summary.scanned < maxDocs) {
    let q = db().collection(COLLECTIONS.archives).orderBy(FieldPath.documentId()).limit(Math.min(pageSize, maxDocs - summary.scanned));
    if (after !== null) q = q.startAfter(after);
    const page = await q.get();
    const last = page.docs[page.docs.length - 1]?.id ?? after;
    const end = page.size < Math.min(pageSize, maxDocs - summary.scanned);
    // Keys first (another database), for the copies that need one; the page's transaction then re-reads the copies,
    // with the shred markers of those keys: a generation the shred decided on seals nothing, and the page is tried
    // again under the next one (decision 0038, "race with a writer").
    const keys = new Map<string, DataKey>();
    const subjects = new Map<string, KeySubject>();
    const marked = new Map<string, number>();
    const keyOf = async (id: string, a: DocumentData): Promise<DataKey> => {
      const subject = subjects.get(id) ?? (await subjectOfCopy(a));
      subjects.set(id, subject);
      const retainUntil = a.retainUntil as unknown;
      return keyForSubject(subject, periodOf(retainUntil instanceof Timestamp ? retainUntil.toMillis() : null), opts.nowMs, marked.get(`${subject.kind}:${subject.id}`));
    };
    if (!opts.dryRun) for (const d of page.docs) if (inClear(d.data())) keys.set(d.id, await keyOf(d.id, d.data()));
    let counts: { sealed: number; mismatched: number } | null = null;
    for (let attempt = 0; ; attempt++) {
      const result = opts.dryRun ? { sealed: page.docs.filter((d) => inClear(d.data())).length, mismatched: 0 } : await sealPage(opts, page.docs.map((d) => d.ref), keys, after, last, end, summary.pages === 0);
      if (result === null || !("marked" in result)) {
        counts = result;
        break;
      }
      if (attempt >= MARKED_KEY_RETRIES) throw new Error(`DATA_KEY_CONTENTION: the shred kept deciding on the data keys of the copies after ${after ?? "the start"} (${result.marked.map((k) => k.ref).join(", ")})`);
      const refused = new Set(result.marked.map((k) => k.ref));
      for (const [id, k] of [...keys]) {
        if (!refused.has(k.ref)) continue;
        const subject = subjects.get(id)!;
        marked.set(`${subject.kind}:${subject.id}`, k.generation);
        keys.set(id, await keyOf(id, page.docs.find((d) => d.id === id)!.data()));
      }
    }
    if (counts === null) break;
    summary.scanned += page.size;
    summary.sealed += counts.sealed;
    summary.mismatched += counts.mismatched;
    summary.pages++;
    after = last;
    if (!opts.dryRun) await opts.afterPage?.(last ?? "");
    if (end) {
      summary.done = true;
      break;
    }
  }
  log.info("shred.migration.done", { ...summary, dryRun: opts.dryRun === true });
  return summary;
}
