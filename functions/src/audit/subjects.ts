import { getAuth } from "firebase-admin/auth";
import { auditSubject, uidFieldsFor, uidLocators, uidsAt, type Finding, type UidLocator } from "./rules";
import { isOpenRequest } from "../requests/rules/requests";
import { adminApp, COLLECTIONS, db } from "../platform/firestore";
import { policy } from "../platform/registry";

/** Admin Auth getUsers takes at most 100 identifiers per call. */
const AUTH_BATCH = 100;
/** Firestore's `in` takes at most 30 values. */
const IN_LIMIT = 30;
/** Paths waiting for their uids' Auth lookup, at most: a uid with many records fills this before the batch. */
const PENDING_PATHS = 1_000;
/** Uids whose answer is remembered for the rest of the scan, at most (then forgotten all at once). */
const REMEMBERED = 50_000;

type Verdict = { orphan: false } | { orphan: true; erasureUnderWay: boolean };

/** A uid waiting for its answer: the paths found with it, and the scopes those paths name (`orgs/o-1/staff/u-1`). */
interface Waiting {
  paths: string[];
  scopes: Set<string>;
}

/**
 * ORPHANED_SUBJECT: collects the uids the user's data map locates in each scanned document (audit/rules.ts#uidLocators:
 * a uid-keyed path such as `people/{uid}`, or a field such as `visits.visitorUid`) and checks them against Auth in
 * batches of at most 100. A uid without an Auth account is an orphan unless its erasure is under way: an open request
 * for the uid, or for a scope its path names (a tenant's closure takes its members' accounts before their data).
 * A uid's answer is remembered (up to 50,000 uids), and a uid already being looked up is not looked up again, so a
 * subject with many records costs one lookup. Memory: one batch of at most 100 uids and 1,000 waiting paths, and the
 * remembered answers.
 */
export class SubjectChecker {
  private readonly locators: UidLocator[];
  private readonly scopeKey: string | null;
  private pending = new Map<string, Waiting>();
  private pendingPaths = 0;
  /** Uids whose lookup has started and not ended: a path found meanwhile joins the lookup's list. */
  private readonly inFlight = new Map<string, Waiting>();
  private readonly verdicts = new Map<string, Verdict>();
  checked = 0;

  constructor(
    private readonly skip: boolean,
    private readonly report: (fs: readonly Finding[]) => void,
  ) {
    const p = policy();
    this.locators = uidLocators(p.dataMap("user"));
    this.scopeKey = p.registry.subjects ? (p.registry.subjects.scope?.key ?? null) : "tenantId";
  }

  /** The fields the scan of a collection group must read for this check. */
  fieldsFor(collectionId: string): string[] {
    return this.skip ? [] : uidFieldsFor(collectionId, this.locators);
  }

  /**
   * Takes one scanned, unheld document: its path, its fields (`get`), and whether its class keeps it while its
   * retention runs (then a `delete` entry's erasure would not take it, so its uid is no orphan's).
   */
  async offer(path: string, get: (field: string) => unknown, keptByClass: boolean): Promise<void> {
    if (this.skip) return;
    for (const { uid, scopeId } of uidsAt(path, get, this.locators, keptByClass, this.scopeKey)) {
      const known = this.verdicts.get(uid);
      if (known) {
        if (known.orphan) this.report(auditSubject({ uid, paths: [path], authExists: false, erasureUnderWay: known.erasureUnderWay }));
        continue;
      }
      const waiting = this.inFlight.get(uid) ?? this.pending.get(uid) ?? this.newPending(uid);
      waiting.paths.push(path);
      if (scopeId !== null) waiting.scopes.add(scopeId);
      if (this.pending.get(uid) === waiting) this.pendingPaths++;
      if (this.pending.size >= AUTH_BATCH || this.pendingPaths >= PENDING_PATHS) await this.flush();
    }
  }

  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    // Swapped before the first await: a uid is in one lookup only, and a path found meanwhile joins it (offer).
    const batch = this.pending;
    this.pending = new Map();
    this.pendingPaths = 0;
    for (const [uid, waiting] of batch) this.inFlight.set(uid, waiting);
    try {
      const res = await getAuth(adminApp()).getUsers([...batch.keys()].map((uid) => ({ uid })));
      const found = new Set(res.users.map((u) => u.uid));
      const orphans = [...batch].filter(([uid]) => !found.has(uid));
      const underWay = await this.erasuresUnderWay(orphans);
      for (const [uid, waiting] of batch) {
        const verdict: Verdict = found.has(uid) ? { orphan: false } : { orphan: true, erasureUnderWay: underWay.has(uid) };
        this.checked++;
        this.remember(uid, verdict);
        this.inFlight.delete(uid);
        if (verdict.orphan) this.report(auditSubject({ uid, paths: waiting.paths, authExists: false, erasureUnderWay: verdict.erasureUnderWay }));
      }
    } finally {
      for (const uid of batch.keys()) this.inFlight.delete(uid);
    }
  }

  private newPending(uid: string): Waiting {
    const waiting: Waiting = { paths: [], scopes: new Set() };
    this.pending.set(uid, waiting);
    return waiting;
  }

  /** The orphans whose erasure is under way: an open request for the uid, or for a scope one of its paths names. */
  private async erasuresUnderWay(orphans: readonly (readonly [string, Waiting])[]): Promise<Set<string>> {
    const underWay = new Set<string>();
    if (orphans.length === 0) return underWay;
    const requests = db().collection(COLLECTIONS.deletionRequests);
    const uids = orphans.map(([uid]) => uid);
    for (let i = 0; i < uids.length; i += IN_LIMIT) {
      const snap = await requests.where("uid", "in", uids.slice(i, i + IN_LIMIT)).select("uid", "state").get();
      for (const d of snap.docs) if (isOpenRequest(d.get("state"))) underWay.add(String(d.get("uid")));
    }
    const scopes = [...new Set(orphans.flatMap(([uid, w]) => (underWay.has(uid) ? [] : [...w.scopes])))];
    const openScopes = new Set<string>();
    for (let i = 0; i < scopes.length; i += IN_LIMIT) {
      const snap = await requests.where("subjectType", "==", "tenant").where("tenantId", "in", scopes.slice(i, i + IN_LIMIT)).select("tenantId", "state").get();
      for (const d of snap.docs) if (isOpenRequest(d.get("state"))) openScopes.add(String(d.get("tenantId")));
    }
    for (const [uid, w] of orphans) if ([...w.scopes].some((s) => openScopes.has(s))) underWay.add(uid);
    return underWay;
  }

  private remember(uid: string, verdict: Verdict): void {
    if (this.verdicts.size >= REMEMBERED) this.verdicts.clear();
    this.verdicts.set(uid, verdict);
  }
}
