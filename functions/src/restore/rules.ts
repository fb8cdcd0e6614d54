/**
 * The erasure replay's rules, pure: what a replay reports for each subject the ledger names in a restored
 * database, and what it does with it.
 */

export type ReplayAction = "erase" | "none" | "blocked";

export interface ReplaySubject {
  kind: "user" | "tenant";
  uid?: string;
  tenantId: string;
  /** A request group's member, erased in its scope only (the group's lead erased the uid-only entries). */
  scopedOnly?: true;
  /** The erased request, as the ledger names it (the replay reopens it under this id). */
  requestId: string;
  erasedAt: string;
  /** What the purge would still delete here, and the kept records whose personal fields are back. */
  toDelete: number;
  toMask: number;
  /** Cloud Storage objects its storage entries reach in the buckets as they are now (back from a bucket restore or soft delete). */
  toDeleteObjects: number;
  /** Records a hold in the restored database keeps (the purge leaves them, as everywhere). */
  underHold: number;
  /** Paths the destroy predicate refuses for a reason other than a hold: the purge would block the request. */
  blocked: number;
  action: ReplayAction;
  /** What the replay did with the request (requests/rules/requests.ts#replayAction), null in a dry run. */
  request: "create" | "end-grace" | "take" | "closed" | null;
  /** The purge's outcome for it (`DONE`, `BLOCKED <reason>`, `BRAKE_REFUSED ...`), null in a dry run. */
  outcome: string | null;
}

/**
 * A subject with something left to delete or mask (documents, or objects back in a bucket) is erased again, unless the predicate would refuse part of
 * it (then the purge would block it: the operator looks first). Nothing left (only what a hold or the data map
 * keeps): nothing to do, which is what makes a second replay write nothing.
 */
export function replayVerdict(r: Pick<ReplaySubject, "toDelete" | "toMask" | "blocked"> & Partial<Pick<ReplaySubject, "toDeleteObjects">>): ReplayAction {
  if (r.blocked > 0) return "blocked";
  return r.toDelete > 0 || r.toMask > 0 || (r.toDeleteObjects ?? 0) > 0 ? "erase" : "none";
}
