import { getAuth } from "firebase-admin/auth";
import { auditSubject, type Finding } from "./rules";
import { OPEN_REQUEST_STATES } from "../requests/rules/requests";
import { matchPattern } from "../kernel/paths";
import { adminApp, COLLECTIONS, db } from "../platform/firestore";
import { policy } from "../platform/registry";

/** Admin Auth getUsers takes at most 100 identifiers per call. */
const AUTH_BATCH = 100;

/**
 * ORPHANED_SUBJECT: collects the uids of uid-keyed documents (the data map's `doc` entries ending in
 * `{uid}`, e.g. a user directory `people/{uid}`) and checks them against Auth in batches of 100. A uid without an Auth
 * account is an orphan unless its erasure is under way (an open request, requests/rules/requests.ts).
 * Memory: one batch of uids and their paths.
 */
export class SubjectChecker {
  private readonly patterns: string[];
  private pending = new Map<string, string[]>();
  checked = 0;

  constructor(
    private readonly skip: boolean,
    private readonly report: (fs: readonly Finding[]) => void,
  ) {
    this.patterns = policy()
      .dataMap("user")
      .filter((e) => e.kind === "doc" && e.path?.endsWith("/{uid}"))
      .map((e) => e.path!);
  }

  async offer(path: string): Promise<void> {
    if (this.skip) return;
    const uid = this.patterns.map((p) => matchPattern(p, path)?.uid).find((u) => u !== undefined);
    if (!uid) return;
    const paths = this.pending.get(uid) ?? [];
    paths.push(path);
    this.pending.set(uid, paths);
    if (this.pending.size >= AUTH_BATCH) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    // Swapped before the first await, so concurrent scans never check a uid twice or lose one.
    const batch = this.pending;
    this.pending = new Map();
    const res = await getAuth(adminApp()).getUsers([...batch.keys()].map((uid) => ({ uid })));
    const found = new Set(res.users.map((u) => u.uid));
    for (const [uid, paths] of batch) {
      this.checked++;
      if (found.has(uid)) continue;
      const open = await db()
        .collection(COLLECTIONS.deletionRequests)
        .where("uid", "==", uid)
        .where("state", "in", [...OPEN_REQUEST_STATES])
        .limit(1)
        .get();
      this.report(auditSubject({ uid, paths, authExists: false, erasureUnderWay: !open.empty }));
    }
  }
}
