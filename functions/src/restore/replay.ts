import { randomUUID } from "node:crypto";
import { recordEvidence } from "../evidence/index";
import { findLedgerMatches, readLedger, type LedgerMatch } from "../erasure/index";
import type { Actor } from "../kernel/actor";
import { maskResidue, planRequestUnit, purgeSettings, runNightlyPurge, type PlanSink, type PurgeHook, type PurgeItem, type UnitReport } from "../purge/index";
import { reopenErasedSubject } from "../requests/index";
import { db, inCell } from "../platform/firestore";
import { PRIMARY_CELL } from "../kernel/policy";
import { log } from "../platform/logs";
import { policy, registryPolicy } from "../platform/registry";
import { settings } from "../platform/settings";
import { replayVerdict, type ReplayAction, type ReplaySubject } from "./rules";

export interface ReplayOptions {
  /** The restored database to put right. */
  databaseId: string;
  /**
   * Which governed database (logical name) it is a restored copy of (default: the primary): the copy is put right
   * with that cell's part of the registry and that cell's erasure-ledger entries.
   */
  cell?: string;
  /** false (the default everywhere): report what would be done and write nothing. */
  apply: boolean;
  actor: Actor;
  nowMs: number;
  correlationId?: string;
  /** Test seam, passed to the purge. */
  hook?: PurgeHook;
}

export interface ReplayReport {
  databaseId: string;
  /** The governed database it is a copy of (logical name). */
  cell: string;
  applied: boolean;
  /** Entries in the erasure ledger. */
  ledgerEntries: number;
  subjects: ReplaySubject[];
  /** Erased tenants found back in the restored database with data to erase again. */
  tenantsBack: string[];
  /** Subjects with something left to erase (dry run: would be erased; applied: were taken by the purge). */
  toErase: number;
  /** Nothing could be done for these (a closed request under the ledger's id, a blocked plan, a purge that did not finish). */
  problems: number;
}

/**
 * What the purge would still do for a matched subject in the database `db()` names: its plan, streamed into a
 * sink that keeps only counts and the mask items (nothing is written), then the masks not yet applied.
 */
async function residueOf(m: LedgerMatch, nowMs: number): Promise<Omit<ReplaySubject, "action" | "request" | "outcome">> {
  const masks: PurgeItem[] = [];
  let underHold = 0;
  const sink: PlanSink = {
    batch: (b) => {
      if (b.kind === "mask") masks.push(...b.items);
    },
    retained: (_index, items) => {
      underHold += items.filter((r) => r.deferredByHold).length;
    },
    ready: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };
  const plan = await planRequestUnit(m.entry.requestId, m.subject, { planId: "replay-check", round: 0, nowMs, batchSize: purgeSettings.batchSize(), sink });
  let unmasked = 0;
  for (let i = 0; i < masks.length; i += 300) {
    const slice = masks.slice(i, i + 300);
    const snaps = await db().getAll(...slice.map((x) => db().doc(x.path)));
    const uid = m.subject.type === "user" ? m.subject.uid : null;
    unmasked += slice.filter((x, k) => snaps[k]!.exists && maskResidue(x, (f) => snaps[k]!.get(f), uid).length > 0).length;
  }
  return {
    kind: m.subject.type,
    ...(m.subject.type === "user" ? { uid: m.subject.uid } : {}),
    tenantId: m.subject.tenantId,
    ...(m.subject.type === "user" && m.subject.scopedOnly === true ? { scopedOnly: true as const } : {}),
    requestId: m.entry.requestId,
    erasedAt: new Date(m.entry.erasedAtMs).toISOString(),
    toDelete: plan.counts.delete,
    toMask: unmasked,
    toDeleteObjects: plan.counts.objects,
    underHold,
    blocked: plan.blockedCount,
  };
}

const outcomeOf = (units: readonly UnitReport[], requestId: string): string => {
  const u = units.find((x) => x.unitKey === requestId);
  return u ? `${u.outcome}${u.reason ? ` ${u.reason}` : ""}` : "NOT_TAKEN";
};

/**
 * Puts a restored database right with the erasure ledger: every subject found in it (or in the buckets its storage
 * entries name) whose keyed hash the ledger holds, and that still has data the purge would erase or mask, is erased
 * again through the normal purge. The plan lists each subject's storage entries against the buckets as they are now,
 * so an object back from a bucket restore or a soft delete is erased again too (`toDeleteObjects` per subject). The
 * purge runs, one request at a time, users before tenants. Its request is the ledger's request id, opened again in
 * the restored database (requests/service.ts#reopenErasedSubject); the purge then applies the restored
 * database's holds, the brake, archives, masks and external copies, and writes its evidence and (finding the
 * ledger entry there) checks the ledger. A dry run plans and writes nothing. Idempotent: a subject with nothing
 * left is reported and left alone, so a second replay writes nothing.
 */
export async function replayErasures(opts: ReplayOptions): Promise<ReplayReport> {
  if (opts.databaseId === settings.ledgerDatabaseId()) throw new Error(`REPLAY_INTO_LEDGER: ${opts.databaseId} is the erasure ledger's database, not a restored copy of the governed one.`);
  const cell = opts.cell ?? PRIMARY_CELL;
  if (!registryPolicy().hasCell(cell)) throw new Error(`UNKNOWN_DATABASE: the registry governs no database named ${cell} (${registryPolicy().cells().join(", ")})`);
  const all = await readLedger();
  const entries = all.filter((e) => (e.database ?? PRIMARY_CELL) === cell);
  return inCell(cell, async () => {
    const { matches } = await findLedgerMatches(entries);
    const subjects: ReplaySubject[] = [];
    for (const m of matches) {
      const residue = await residueOf(m, opts.nowMs);
      subjects.push({ ...residue, action: replayVerdict(residue), request: null, outcome: null });
    }
    const due = subjects.filter((s) => s.action === "erase");
    if (opts.apply && due.length > 0) {
      const correlationId = opts.correlationId ?? randomUUID();
      await recordEvidence(correlationId, {
        action: "ERASURE_REPLAY",
        actor: opts.actor,
        decision: { reason: "ERASURE_LEDGER", databaseId: opts.databaseId, ...(cell === PRIMARY_CELL ? {} : { database: cell }) },
        policyVersion: policy().version,
        atMs: opts.nowMs,
        correlationId,
        counts: { ledgerEntries: entries.length, matched: subjects.length, toErase: due.length },
      });
      for (const s of due) {
        const subject = s.kind === "user" ? { type: "user" as const, uid: s.uid!, tenantId: s.tenantId, ...(s.scopedOnly === true ? { scopedOnly: true as const } : {}) } : { type: "tenant" as const, tenantId: s.tenantId };
        const opened = await reopenErasedSubject({ requestId: s.requestId, subject, actor: opts.actor, nowMs: opts.nowMs });
        s.request = opened.action;
        if (opened.action === "closed") {
          s.outcome = `REQUEST_${opened.state}`;
          continue;
        }
        const run = await runNightlyPurge({
          nowMs: opts.nowMs,
          asOfMs: null,
          dryRun: false,
          actor: opts.actor,
          correlationId,
          sweep: false,
          requestIds: [s.requestId],
          maxRequests: Number.MAX_SAFE_INTEGER,
          // The task queue's chunks run against the deployed database: a replay runs every step here.
          fanOutThreshold: Number.MAX_SAFE_INTEGER,
          hook: opts.hook,
        });
        s.outcome = outcomeOf(run.units as UnitReport[], s.requestId);
      }
      log.info("erasure.replay.done", { databaseId: opts.databaseId, matched: subjects.length, erased: due.length });
    }
    const problems = subjects.filter((s) => s.action === "blocked" || (s.outcome !== null && !/^DONE\b/.test(s.outcome))).length;
    return {
      databaseId: opts.databaseId,
      cell,
      applied: opts.apply,
      ledgerEntries: entries.length,
      subjects,
      tenantsBack: subjects.filter((s) => s.kind === "tenant" && s.action !== "none").map((s) => s.tenantId),
      toErase: due.length,
      problems,
    };
  }, opts.databaseId);
}

export type { ReplayAction };
