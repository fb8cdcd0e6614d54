import { EVIDENCE_TX, openEvidence, verifierKeys } from "../evidence/index";
import { entryDocId, entryHashMatches, entryMac, type ChainedEvidence } from "../evidence/rules";
import { FieldPath, type DocumentData, type DocumentReference, type QueryDocumentSnapshot } from "firebase-admin/firestore";
import type { Actor } from "../evidence/rules";
import { heldBy, isHeld } from "../kernel/held";
import {
  classifyTtlDelete,
  markerExpireAtMs,
  purgeBatchExplains,
  purgeMarkOf,
  ttlChildrenEvidenceBody,
  ttlDeletePlan,
  ttlEvidenceBody,
  versionString,
  type PurgeMark,
  type TtlDeleteClass,
} from "./rules";
import { COLLECTIONS, db } from "../platform/firestore";
import { readGoverned, toTimestamp } from "../platform/governed-doc";
import { readFenceInTx, activeHoldsCoveringInTx } from "../holds/index";
import { log } from "../platform/logs";
import { emitMetric } from "../platform/metrics";
import { policy } from "../platform/registry";

/**
 * Children removed per transaction. Firestore caps a commit at 500 writes and advises keeping transactions
 * far smaller (contention and lock time grow with size); 100 deletes plus the marker and two evidence writes
 * stays well inside both. It also bounds an entry: a page's children are named in the entry of its commit.
 */
export const TTL_CHILD_PAGE_SIZE = 100;

export interface TtlDeleteInput {
  /** The CloudEvent id: the idempotency key of the whole effect. */
  eventId: string;
  eventTimeMs: number;
  /** The deleted document's path. */
  path: string;
  /** The deleted document's data, as carried by the event (never written anywhere). */
  data: DocumentData | undefined;
  /** The deleted version (its last update time, `seconds.nanoseconds`), as carried by the event; null if absent. */
  version: string | null;
  /** The trigger's function name; the evidence actor. */
  trigger: string;
  /** Child collections the registry places under this parent. Subcollections found on the parent are added. */
  childCollections: readonly string[];
}

export interface TtlDeleteOptions {
  nowMs?: () => number;
  pageSize?: number;
  /**
   * Fault-injection seam for tests: called inside each transaction after every write is queued and
   * before commit. Throwing here aborts the transaction, exactly as a crash before commit would.
   */
  beforeCommit?: (stage: "page" | "final") => void;
}

export interface TtlDeleteResult {
  outcome: "PROCESSED" | "DUPLICATE" | "WORKFLOW_SKIPPED";
  classification: TtlDeleteClass;
  childrenRemoved: number;
  childrenKept: number;
  /** Document writes this call committed (deletes, marker, evidence entry and its chain's head). */
  writes: number;
  /** The evidence entry's document id (`deletionAudits/{id}`). */
  evidenceId: string | null;
}

/** `processedEvents/{eventId}`: the idempotency marker, and the progress of a delete with many children. */
interface MarkerDoc {
  eventId: string;
  trigger: string;
  path: string;
  state: "IN_PROGRESS" | "DONE";
  classification: TtlDeleteClass;
  childrenRemoved: number;
  childrenKept: number;
  /** Where the next page starts, while IN_PROGRESS: a child collection id and the last child id read in it. */
  cursor: { collection: string; after: string | null } | null;
  /** TTL_CHILDREN_DELETED entries committed so far, one per earlier page that removed children. */
  childPages: number;
  evidenceId: string | null;
}

/**
 * Carries out the effect of one delete event, exactly once however often the event is delivered.
 *
 * The marker and the effect commit in one transaction: the marker is read first, and a DONE marker means the
 * event was already handled. A crash (or a thrown fault) before commit leaves neither the marker nor the
 * effect, so the redelivery redoes it all; after commit, the redelivery finds the marker and does nothing.
 *
 * Up to a page of children, that is a single transaction: delete the children, write the DONE marker and
 * append the evidence. Beyond a page, each page is a transaction of its own that deletes the page and moves
 * the marker's cursor (state IN_PROGRESS) together, so progress and counts survive a crash; the last page
 * writes DONE and the evidence with the totals. A marker that is IN_PROGRESS never suppresses a redelivery.
 * Every child removed is named in the evidence of the commit that removes it: the last page's in the delete's
 * entry, each earlier page's in a TTL_CHILDREN_DELETED entry of its own.
 *
 * A delete that a committed purge batch explains (the deleted document's mark names the batch, and the
 * batch's signed PURGE_BATCH entry names the path: {@link explainingBatch}) has no effect at all. Every other
 * delete is recorded, PURGE_ELIGIBLE or not.
 */
export async function processTtlDelete(input: TtlDeleteInput, opts: TtlDeleteOptions = {}): Promise<TtlDeleteResult> {
  const now = opts.nowMs ?? Date.now;
  const pageSize = opts.pageSize ?? TTL_CHILD_PAGE_SIZE;
  const pol = policy();
  const firestore = db();
  const markerRef = firestore.collection(COLLECTIONS.processedEvents).doc(input.eventId);
  const parentRef = firestore.doc(input.path);
  // Cheap exit for redeliveries before anything else is read; the transaction below checks again.
  const early = await markerRef.get();
  if ((early.data() as MarkerDoc | undefined)?.state === "DONE") return duplicate(early.data() as MarkerDoc, input);

  const facts = readGoverned(input.data);
  const expireAtMs = facts?.expireAtMs ?? null;
  const mark = purgeMarkOf(input.data);
  const base = { eventId: input.eventId, path: input.path };
  const deleted = { path: input.path, legalHold: facts?.legalHold ?? false, lifecycleState: facts?.lifecycleState ?? null, holdIds: facts?.holdIds ?? [], expireAtMs };
  // The purge's own delete (its PURGE_BATCH entry committed with it) is classified before holds are read: the
  // rule needs no holds for it, so such a delete costs no hold read and no write.
  const explained = mark !== null && (await explainingBatch({ path: input.path, version: input.version ?? null, mark }));
  // Held as everywhere (holds/rules.ts#heldBy): a hold record on the document or an ancestor covers it even
  // where the flag was never set (a subtree hold covers documents created after it).
  const holds = explained ? [] : await firestore.runTransaction((tx) => activeHoldsCoveringInTx(tx, input.path), { readOnly: true });
  const holdId = heldBy(deleted, holds)?.holdId ?? null;
  const classification = classifyTtlDelete(deleted, input.eventTimeMs, holds, explained);
  const plan = ttlDeletePlan(classification);
  const action = plan.action;
  if (action === null) {
    log.info("ttl.delete.workflow_observed", { ...base, classification, trigger: input.trigger, ...(mark ? { batch: mark.batch } : {}) });
    return { outcome: "WORKFLOW_SKIPPED", classification, childrenRemoved: 0, childrenKept: 0, writes: 0, evidenceId: null };
  }
  const logged = { ...base, classification, ...(mark ? { markedBy: `${mark.unitKey}/${mark.batch}` } : {}) };

  const collections = plan.removeChildren ? await childCollectionsOf(parentRef, input.childCollections) : [];
  const actor: Actor = { type: "system", id: input.trigger };
  let writes = 0;

  for (;;) {
    const step = await firestore.runTransaction(async (tx) => {
      const markerSnap = await tx.get(markerRef);
      const marker = markerSnap.data() as MarkerDoc | undefined;
      if (marker?.state === "DONE") return { kind: "duplicate" as const, marker };
      if (marker && marker.path !== input.path) {
        throw new Error(`processedEvents/${input.eventId} belongs to another document; refusing to reuse an event id`);
      }
      // A parent that exists again was re-created after the delete: its subcollections are not orphans.
      const parentRecreated = (await tx.get(parentRef)).exists;
      // The hold fence (holds/fence.ts): holds covering the parent are read again in the transaction that
      // deletes, so a hold placed since the classification above keeps every child under it.
      const fenceGeneration = await readFenceInTx(tx);
      const holdsNow = await activeHoldsCoveringInTx(tx, input.path);
      // The cursor names its collection, so a collection emptied by an earlier page (and no longer listed)
      // cannot shift it; collections are walked in sorted order.
      const start = marker?.cursor ?? null;
      let index = start ? collections.findIndex((c) => c >= start.collection) : 0;
      if (index < 0) index = collections.length;
      let after = start && collections[index] === start.collection ? start.after : null;
      const page: QueryDocumentSnapshot[] = [];
      const walking = plan.removeChildren && !parentRecreated;
      while (walking && page.length < pageSize && index < collections.length) {
        const limit = pageSize - page.length;
        let q = parentRef.collection(collections[index]!).select("legalHold", "lifecycleState", "holdIds").orderBy(FieldPath.documentId()).limit(limit);
        if (after !== null) q = q.startAfter(after);
        const snap = await tx.get(q);
        page.push(...snap.docs);
        if (snap.size < limit) {
          index++;
          after = null;
        } else after = snap.docs[snap.size - 1]!.id;
      }
      const finished = !walking || index >= collections.length;

      let removed = marker?.childrenRemoved ?? 0;
      let kept = marker?.childrenKept ?? 0;
      const childPages = marker?.childPages ?? 0;
      const removing: DocumentReference[] = [];
      for (const child of page) {
        const g = readGoverned(child.data());
        // A child under its own hold, or under a hold on the parent or above, stays even when its parent expired.
        if (isHeld({ path: child.ref.path, legalHold: g?.legalHold ?? false, lifecycleState: g?.lifecycleState ?? null, holdIds: g?.holdIds ?? [] }, holdsNow)) kept++;
        else removing.push(child.ref);
      }
      const keptHere = kept - (marker?.childrenKept ?? 0);
      // Every read before the first write (Firestore's rule): the chain head, when this commit appends.
      const evidence = finished || removing.length > 0 ? await openEvidence(tx, input.path) : null;
      for (const ref of removing) tx.delete(ref);
      removed += removing.length;
      const childPaths = removing.map((r) => r.path);
      const nowMs = now();
      const retentionClass = pol.classForPath(input.path)?.id ?? null;
      const markerBody: MarkerDoc = {
        eventId: input.eventId,
        trigger: input.trigger,
        path: input.path,
        state: finished ? "DONE" : "IN_PROGRESS",
        classification,
        childrenRemoved: removed,
        childrenKept: kept,
        cursor: finished ? null : { collection: collections[index]!, after },
        childPages,
        evidenceId: null,
      };
      const stamps = { updatedAt: toTimestamp(nowMs), expireAt: toTimestamp(markerExpireAtMs(nowMs, pol)) };
      if (!finished) {
        // A page before the last: its children are named in an entry committed with their deletes.
        if (evidence) {
          evidence.append(
            ttlChildrenEvidenceBody({ cls: classification, actor, eventId: input.eventId, parentPath: input.path, retentionClass, policyVersion: pol.version, nowMs, childPaths, kept: keptHere, page: childPages, fenceGeneration }),
          );
        }
        tx.set(markerRef, { ...markerBody, childPages: childPages + (evidence ? 1 : 0), ...stamps });
        opts.beforeCommit?.("page");
        // Children deleted, the marker, and the page's entry with its chain's head.
        return { kind: "page" as const, writes: removing.length + 1 + (evidence ? 2 : 0) };
      }
      const entry = evidence!.append(
        ttlEvidenceBody({
          action,
          cls: classification,
          actor,
          eventId: input.eventId,
          path: input.path,
          retentionClass,
          policyVersion: pol.version,
          docPolicyVersion: facts?.policyVersion && facts.policyVersion !== pol.version ? facts.policyVersion : null,
          expireAtMs,
          eventTimeMs: input.eventTimeMs,
          nowMs,
          childrenRemoved: removed,
          childrenKept: kept,
          childPaths,
          childPages,
          parentRecreated,
          holdId,
          mark,
          fenceGeneration,
        }),
      );
      tx.set(markerRef, { ...markerBody, evidenceId: entryDocId(entry), ...stamps });
      opts.beforeCommit?.("final");
      // Children deleted, the marker, the evidence entry and its chain's head.
      return { kind: "done" as const, writes: removing.length + 3, removed, kept, evidenceId: entryDocId(entry), parentRecreated };
    }, EVIDENCE_TX);

    if (step.kind === "duplicate") return duplicate(step.marker, input);
    writes += step.writes;
    if (step.kind === "page") continue;

    const fields = { ...logged, trigger: input.trigger, childrenRemoved: step.removed, childrenKept: step.kept, writes, evidenceId: step.evidenceId };
    if (plan.severity === "error") log.error("ttl.delete.held_incident", { ...fields, action });
    else if (plan.severity === "warn") log.warn("ttl.delete.unexplained", { ...fields, parentRecreated: step.parentRecreated });
    else log.info("ttl.delete.processed", { ...fields, parentRecreated: step.parentRecreated });
    // Once per event: only the delivery that committed the effect gets here.
    const cls = pol.classForPath(input.path)?.id ?? "(unknown)";
    emitMetric("retention.ttl_deletions", 1, { class: cls, classification });
    if (expireAtMs !== null) emitMetric("retention.ttl_cleanup_lag_ms", Math.max(0, input.eventTimeMs - expireAtMs), { class: cls });
    return { outcome: "PROCESSED", classification, childrenRemoved: step.removed, childrenKept: step.kept, writes, evidenceId: step.evidenceId };
  }
}

function duplicate(marker: MarkerDoc, input: TtlDeleteInput): TtlDeleteResult {
  log.info("ttl.delete.duplicate", { eventId: input.eventId, path: input.path, trigger: input.trigger });
  emitMetric("retention.trigger_retries", 1, { trigger: input.trigger });
  return {
    outcome: "DUPLICATE",
    classification: marker.classification,
    childrenRemoved: 0,
    childrenKept: 0,
    writes: 0,
    evidenceId: marker.evidenceId ?? null,
  };
}

/**
 * The registry's child collections plus any other subcollection found under the parent: whatever sits
 * under a deleted parent is an orphan, whether or not the registry expected it there.
 */
async function childCollectionsOf(parentRef: DocumentReference, fromRegistry: readonly string[]): Promise<string[]> {
  const found = (await parentRef.listCollections()).map((c) => c.id);
  return [...new Set([...fromRegistry, ...found])].sort();
}

/**
 * Whether a committed purge batch explains the delete of a marked document (ttl/rules.ts#purgeBatchExplains).
 * One equality query by the batch id the mark names (`detail.batch` and `action`, served by the automatic
 * single-field indexes, merged), answered by the batch's one PURGE_BATCH entry or nothing: the cost of a
 * purge's own delete is this read instead of the hold read, whatever the ledger's size. The entry is
 * checked where it is read: its hash against its content, its MAC against the evidence keys, so a written
 * entry without the key explains nothing.
 */
async function explainingBatch(deleted: { path: string; version: string | null; mark: PurgeMark }): Promise<boolean> {
  const snap = await db()
    .collection(COLLECTIONS.deletionAudits)
    .where("detail.batch", "==", deleted.mark.batch)
    .where("action", "==", "PURGE_BATCH")
    .limit(2)
    .get();
  const keys = verifierKeys();
  return snap.docs.some((d) => {
    const entry = d.data() as ChainedEvidence;
    const secret = typeof entry.keyId === "string" ? keys?.get(entry.keyId) : undefined;
    const signed = secret !== undefined && entryHashMatches(entry) && entryMac(secret, entry.hash) === entry.mac;
    return purgeBatchExplains(deleted, {
      action: entry.action,
      paths: Array.isArray(entry.paths) ? entry.paths : [],
      detail: entry.detail ?? {},
      signed,
      committedVersion: versionString(d.createTime),
    });
  });
}
