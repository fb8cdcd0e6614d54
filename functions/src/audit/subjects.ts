import { getAuth } from "firebase-admin/auth";
import { locatorsIn, orphanFinding, uidFieldsFor, uidLocators, uidsAt, type Finding, type UidLocator } from "./rules";
import { isOpenRequest } from "../requests/rules/requests";
import { storedRequestStates } from "../requests/index";
import { adminApp } from "../platform/firestore";
import { policy } from "../platform/registry";

/** Admin Auth getUsers takes at most 100 identifiers per call. */
const AUTH_BATCH = 100;
/** Paths waiting for a batch, at most: a uid with many records fills this before the batch of uids. */
const PENDING_PATHS = 1_000;
/** Uids (and scopes) whose answer is remembered for the rest of the scan, at most (then forgotten all at once). */
const REMEMBERED = 50_000;

/** What Auth and the requests say of a uid: whether it has an account, and an open request of its own. */
interface Account {
  exists: boolean;
  requestOpen: boolean;
}

/** A record waiting for its answer: its path, and the scope the path names (`orgs/o-1/staff/u-1`), if any. */
interface Found {
  path: string;
  scopeId: string | null;
}

/**
 * ORPHANED_SUBJECT: collects the uids the user's data map locates in each scanned document (audit/rules.ts#uidLocators:
 * a uid-keyed path such as `people/{uid}`, or a field such as `visits.visitorUid`) and checks them against Auth in
 * calls of at most 100 (the registry's system uids, subjects.user.systemUids, are no person's and are skipped). A
 * record of a uid without an Auth account is an orphan's unless an erasure of it is under way:
 * an open request for the uid, or for the scope the record's path names (a closure erases its members' records with
 * the scope's). That is decided per record, as two records of one uid may lie in different scopes.
 * Answers are remembered (up to 50,000 uids and as many scopes), and a uid already being looked up is not looked up
 * again, so a subject with many records costs one lookup. Memory: per collection-group scan under way, a batch of
 * about 100 uids and 1,000 waiting paths (more may join a lookup under way), and the remembered answers.
 */
export class SubjectChecker {
  private readonly locators: UidLocator[];
  /** The locators of each collection id met so far (audit/rules.ts#locatorsIn). */
  private readonly byCollection = new Map<string, UidLocator[]>();
  private readonly scopeKey: string | null;
  /** The registry's uids of no person (subjects.user.systemUids): never looked up, never reported. */
  private readonly systemUids: ReadonlySet<string>;
  private pending = new Map<string, Found[]>();
  private pendingPaths = 0;
  /** Uids whose lookup has started and not ended: a record found meanwhile joins the lookup's list. */
  private readonly inFlight = new Map<string, Found[]>();
  private readonly accounts = new Map<string, Account>();
  /** Scope id: whether a request to erase the scope is open. */
  private readonly scopes = new Map<string, boolean>();
  checked = 0;

  constructor(
    private readonly skip: boolean,
    private readonly report: (fs: readonly Finding[]) => void,
  ) {
    const p = policy();
    this.locators = uidLocators(p.dataMap("user"));
    this.scopeKey = p.registry.subjects ? (p.registry.subjects.scope?.key ?? null) : "tenantId";
    this.systemUids = new Set(p.registry.subjects?.user.systemUids ?? []);
  }

  /** The fields the scan of a collection group must read for this check. */
  fieldsFor(collectionId: string): string[] {
    return this.skip ? [] : uidFieldsFor(collectionId, this.locators);
  }

  /** Whether a record of this collection id can hold a located uid: the scan offers the others nothing. */
  covers(collectionId: string): boolean {
    return !this.skip && this.locatorsAt(collectionId).length > 0;
  }

  private locatorsAt(collectionId: string): readonly UidLocator[] {
    let found = this.byCollection.get(collectionId);
    if (!found) {
      found = locatorsIn(collectionId, this.locators);
      this.byCollection.set(collectionId, found);
    }
    return found;
  }

  /**
   * Takes one scanned, unheld document: its path, its fields (`get`), and whether its class keeps it while its
   * retention runs (then a `delete` entry's erasure would not take it, so its uid is no orphan's). A scan passes the
   * collection id it already knows, so the path is not split again for every record.
   */
  async offer(path: string, get: (field: string) => unknown, keptByClass: boolean, collectionId = collectionIdOfPath(path)): Promise<void> {
    if (this.skip) return;
    const locators = this.locatorsAt(collectionId);
    if (locators.length === 0) return;
    for (const { uid, scopeId } of uidsAt(path, get, locators, keptByClass, this.scopeKey)) {
      if (this.systemUids.has(uid)) continue;
      const found = { path, scopeId };
      const account = this.accounts.get(uid);
      if (account && this.settle(uid, account, found)) continue;
      const joined = this.inFlight.get(uid);
      if (joined) {
        joined.push(found);
        continue;
      }
      this.wait(uid, found);
      if (this.pending.size >= AUTH_BATCH || this.pendingPaths >= PENDING_PATHS) await this.flush();
    }
  }

  /** Looks up what waits, until nothing does (a record that joined a lookup in a scope it had not read waits again). */
  async flush(): Promise<void> {
    while (this.pending.size > 0) await this.flushBatch();
  }

  private async flushBatch(): Promise<void> {
    // Swapped before the first await: a uid is in one lookup only, and a record found meanwhile joins it (offer).
    const batch = this.pending;
    this.pending = new Map();
    this.pendingPaths = 0;
    for (const [uid, found] of batch) this.inFlight.set(uid, found);
    try {
      // This batch's answers, kept apart from the remembered ones, which may be forgotten while it runs.
      const accounts = new Map([...batch.keys()].flatMap((uid) => (this.accounts.has(uid) ? [[uid, this.accounts.get(uid)!] as const] : [])));
      const unknown = [...batch.keys()].filter((uid) => !accounts.has(uid));
      if (unknown.length > 0) {
        // Slices of 100: records that waited again, or whose scope was unknown, can make a batch larger.
        const exists = new Set<string>();
        for (let i = 0; i < unknown.length; i += AUTH_BATCH) {
          const res = await getAuth(adminApp()).getUsers(unknown.slice(i, i + AUTH_BATCH).map((uid) => ({ uid })));
          for (const u of res.users) exists.add(u.uid);
        }
        const open = await this.openUserRequests(unknown.filter((uid) => !exists.has(uid)));
        for (const uid of unknown) {
          this.checked++;
          accounts.set(uid, { exists: exists.has(uid), requestOpen: open.has(uid) });
          this.remember(this.accounts, uid, accounts.get(uid)!);
        }
      }
      const orphans = [...accounts].filter(([, a]) => !a.exists && !a.requestOpen).map(([uid]) => uid);
      const scopes = await this.scopesOpen(orphans.flatMap((uid) => this.inFlight.get(uid)!.flatMap((f) => (f.scopeId === null ? [] : [f.scopeId]))));
      // Synchronous from here: no record joins a uid's list after it is settled.
      for (const uid of batch.keys()) {
        const account = accounts.get(uid)!;
        const found = this.inFlight.get(uid)!;
        this.inFlight.delete(uid);
        for (const f of found) if (!this.settle(uid, account, f, (id) => scopes.get(id) ?? this.scopes.get(id))) this.wait(uid, f);
      }
    } finally {
      for (const uid of batch.keys()) this.inFlight.delete(uid);
    }
  }

  /**
   * Reports the record if it is an orphan's, once its answer is known; says whether it was (a record in a scope not
   * looked up yet waits for the next flush, which looks the scope up).
   */
  private settle(uid: string, account: Account, found: Found, scopeOpen: (scopeId: string) => boolean | undefined = (id) => this.scopes.get(id)): boolean {
    if (account.exists || account.requestOpen) return true;
    const open = found.scopeId === null ? false : scopeOpen(found.scopeId);
    if (open === undefined) return false;
    if (!open) this.report([orphanFinding(uid, found.path)]);
    return true;
  }

  private wait(uid: string, found: Found): void {
    const waiting = this.pending.get(uid) ?? [];
    waiting.push(found);
    this.pending.set(uid, waiting);
    this.pendingPaths++;
  }

  /** The uids among `uids` with an open request of their own. */
  private async openUserRequests(uids: readonly string[]): Promise<Set<string>> {
    const states = await storedRequestStates("user", uids);
    return new Set([...states].filter(([, s]) => s.some(isOpenRequest)).map(([uid]) => uid));
  }

  /** Whether each scope has an open request to erase it: remembered answers, and a read for the others. */
  private async scopesOpen(scopeIds: readonly string[]): Promise<Map<string, boolean>> {
    const ids = [...new Set(scopeIds)];
    const answers = new Map(ids.flatMap((id) => (this.scopes.has(id) ? [[id, this.scopes.get(id)!] as const] : [])));
    const unknown = ids.filter((id) => !answers.has(id));
    const states = await storedRequestStates("scope", unknown);
    for (const id of unknown) {
      const open = (states.get(id) ?? []).some(isOpenRequest);
      answers.set(id, open);
      this.remember(this.scopes, id, open);
    }
    return answers;
  }

  private remember<V>(map: Map<string, V>, key: string, value: V): void {
    if (map.size >= REMEMBERED) map.clear();
    map.set(key, value);
  }
}

/** The id of the collection a document path lies in (`orgs/o-1/members/m-1`: `members`). */
function collectionIdOfPath(path: string): string {
  const last = path.lastIndexOf("/");
  return path.slice(path.lastIndexOf("/", last - 1) + 1, last);
}
