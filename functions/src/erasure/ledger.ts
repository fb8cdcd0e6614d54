import { FieldPath, FieldValue, Timestamp, type QueryDocumentSnapshot } from "firebase-admin/firestore";
import { keyedSubjectHash } from "../evidence/index";
import { COLLECTIONS, db, governedDatabaseId } from "../platform/firestore";
import { log } from "../platform/logs";
import { policy, registryPolicy } from "../platform/registry";
import { settings } from "../platform/settings";
import { buildLedgerEntry, entryConflicts, goneByUpdate, ledgerEntryId, PRIMARY_LEDGER_DATABASE, type ErasureFacts, type LedgerEntry, type MaskedCollection } from "./rules";

/**
 * The erasure ledger: one document per erased request in its own database (RETENTION_LEDGER_DATABASE_ID), so a
 * restore of the governed database never rolls it back. Clients have no access to it (firestore.ledger.rules).
 */
export class LedgerDatabaseError extends Error {
  constructor(databaseId: string) {
    super(`LEDGER_IN_GOVERNED_DATABASE: the erasure ledger's database (${databaseId}) is the governed database; a restore would roll it back. Set RETENTION_LEDGER_DATABASE_ID to another database.`);
    this.name = "LedgerDatabaseError";
  }
}

/** The ledger's database; never one being governed (any cell's) or replayed into. The archive's data keys live there too (shred/keys.ts). */
export function ledgerDb() {
  const id = settings.ledgerDatabaseId();
  if (id === governedDatabaseId() || registryPolicy().cells().some((c) => settings.cellDatabaseId(c) === id)) throw new LedgerDatabaseError(id);
  return db(id);
}

const ledgerCol = () => ledgerDb().collection(COLLECTIONS.erasureLedger);

const patternOf = (path: string): string | null => policy().ruleForPath(path)?.pattern ?? null;

/**
 * Records an erasure the purge has carried out, before the request is reported PURGED (or RETAINED_UNDER_HOLD):
 * creates the request's entry, or finds it there and checks it names the same request and subject (a retried
 * finalize, a later round, or a replay of the erasure into a restored database), moving its "fully gone by" date
 * later when this erasure's is ({@link goneByUpdate}). A different subject under the
 * same id throws LEDGER_ENTRY_CONFLICT, and the purge stops there rather than report the erasure done.
 */
export async function recordErasure(facts: ErasureFacts): Promise<"created" | "exists"> {
  const entry = buildLedgerEntry(facts, keyedSubjectHash, patternOf);
  const ref = ledgerCol().doc(ledgerEntryId(entry.requestId, entry.database ?? PRIMARY_LEDGER_DATABASE));
  const outcome = await ref.firestore.runTransaction(async (tx) => {
    const snap = await tx.get(ref);
    if (snap.exists) {
      const conflicts = entryConflicts(snap.data() as Partial<LedgerEntry>, entry);
      if (conflicts.length > 0) throw new Error(`LEDGER_ENTRY_CONFLICT: ledger entry ${ref.id} records another erasure (${conflicts.join(", ")} differ)`);
      const later = goneByUpdate(msOf(snap.get("fullyGoneBy")), entry.fullyGoneByMs);
      if (later !== null) tx.update(ref, { fullyGoneBy: Timestamp.fromMillis(later) });
      return "exists" as const;
    }
    const { erasedAtMs, fullyGoneByMs, ...rest } = entry;
    tx.create(ref, {
      ...rest,
      erasedAt: Timestamp.fromMillis(erasedAtMs),
      fullyGoneBy: fullyGoneByMs === null ? null : Timestamp.fromMillis(fullyGoneByMs),
      recordedAt: FieldValue.serverTimestamp(),
      schema: 1,
    });
    return "created" as const;
  });
  log.info("erasure.ledger.recorded", { requestId: entry.requestId, database: entry.database ?? PRIMARY_LEDGER_DATABASE, subjectKind: entry.subjectKind, outcome });
  return outcome;
}

const msOf = (v: unknown): number | null => (v instanceof Timestamp ? v.toMillis() : null);

function entryFrom(d: QueryDocumentSnapshot): LedgerEntry {
  const x = d.data();
  return {
    requestId: String(x.requestId ?? d.id),
    ...(typeof x.database === "string" && x.database !== PRIMARY_LEDGER_DATABASE ? { database: x.database } : {}),
    subjectKind: x.subjectKind === "tenant" ? "tenant" : "user",
    subjectHash: String(x.subjectHash ?? ""),
    tenantHash: typeof x.tenantHash === "string" ? x.tenantHash : null,
    policyVersion: String(x.policyVersion ?? ""),
    erasedAtMs: x.erasedAt instanceof Timestamp ? x.erasedAt.toMillis() : 0,
    masked: Array.isArray(x.masked) ? (x.masked as MaskedCollection[]) : [],
    fullyGoneByMs: msOf(x.fullyGoneBy),
    ...(x.scopedOnly === true ? { scopedOnly: true as const } : {}),
  };
}

const PAGE = 500;

/** Every ledger entry, in id order, a page at a time. */
export async function readLedger(): Promise<LedgerEntry[]> {
  const out: LedgerEntry[] = [];
  let last: QueryDocumentSnapshot | undefined;
  for (;;) {
    let q = ledgerCol().orderBy(FieldPath.documentId()).limit(PAGE);
    if (last) q = q.startAfter(last);
    const snap = await q.get();
    out.push(...snap.docs.map(entryFrom));
    if (snap.size < PAGE) return out;
    last = snap.docs[snap.docs.length - 1];
  }
}
