import { EVIDENCE_TX, openEvidence } from "../../evidence/index";
import { deleteAuthAccount as deleteAccount } from "../../platform/auth-accounts";
import { FieldValue, type Transaction } from "firebase-admin/firestore";
import { assertRequestMove, heldAtGeneration, parseRequestState } from "../../requests/rules/requests";
import { spansCells } from "../../requests/index";
import { requestOutcome, type VerifyTally } from "../rules/verify";
import { db } from "../../platform/firestore";
import { toMs, toTimestamp } from "../../platform/governed-doc";
import { activeAmongInTx, readFenceInTx } from "../../holds/index";
import { log } from "../../platform/logs";
import { fenceStep, writeCheckpoint } from "./step";
import { fire, purgeEvidence, type StepEnv } from "./env";
import { requestRef, type UnitCheckpoint } from "../store";
import { lateSweep, type LateFindings } from "./late";
import { RoundFacts, verifyUnit } from "./verify";
import { deleteTenantAccounts, ScopeUids } from "./tenant-accounts";
import type { Steps } from "./step";
import { maskedIn, recordLedgerEntry, type MaskedPaths } from "./ledger";
import { archiveCopiesOf } from "./archive";
import { purgedGoneBy, withExportsExpiry, withProcessorsDeadline, type GoneBy } from "../../requests/rules/gone-by";
import { eraseSubjectExports } from "../../access/index";
import { existingNoticesInTx, processorsDeadlineMs, writeNoticesInTx } from "../../processors/index";
import type { Subject } from "../../plan/rules";
import { purgeSettings } from "../settings";
import { finishGroupAccountDeletion, groupAccountIntent, groupAccountIntentEvidence, groupTakesAccountInTx } from "./group-account";
import { policy } from "../../platform/registry";
import { storageSettings } from "../../platform/storage";

/** The id a processor knows a subject by: a user's uid, a scope's id. */
const noticeSubject = (s: Subject): { type: "user" | "tenant"; id: string; scopeId?: string } =>
  s.type === "user" ? { type: "user", id: s.uid, ...(s.tenantId ? { scopeId: s.tenantId } : {}) } : { type: "tenant", id: s.tenantId };

const groupIdOf = (v: unknown): string | null => (typeof v === "string" && v !== "" ? v : null);

/** Findings named in evidence: enough to act on, bounded so one entry stays small. */
const MAX_FINDING_PATHS = 100;

/** Hold records the finalize transaction reads at most; past it the round's decided generation is stored. */
const MAX_KEEPERS_READ = 100;

/**
 * The hold fence generation a request retained under a hold stores (`heldAtGeneration`), judged in the finalize
 * transaction: the fence and the hold records that keep what remains are read there, so no release can commit
 * between this judgement and the write (requests/rules/requests.ts#heldAtGeneration, docs/HOLD-FENCE.md).
 */
async function judgeHeldInTx(tx: Transaction, cp: UnitCheckpoint, tally: VerifyTally): Promise<{ heldAt: number; finalGeneration: number }> {
  const readable = tally.keepers.length <= MAX_KEEPERS_READ;
  const [finalGeneration, active] = await Promise.all([readFenceInTx(tx), readable ? activeAmongInTx(tx, tally.keepers) : Promise.resolve(null)]);
  const heldAt = heldAtGeneration({ decidedGeneration: cp.fenceGeneration, finalGeneration, keepers: tally.keepers, keptWithoutHoldId: tally.keptWithoutHoldId, activeAtFinal: active });
  return { heldAt, finalGeneration };
}

/**
 * The subject's Auth account goes once everything that may be erased is erased: when the request is PURGED,
 * and also when it is RETAINED_UNDER_HOLD (docs/decisions/0003-auth-account-under-hold.md). A member of a request
 * group does not come here: the group's account goes once, when its last member ends PURGED (group-account.ts). It stayed during
 * the grace period so the user could cancel. Recorded in three steps, each fenced by the lease: the intent
 * (AUTH_ACCOUNT_DELETE_INTENT, on the request first, so the Auth-delete backstop sees the request handled),
 * the delete itself, then its outcome (AUTH_ACCOUNT_DELETED, `deleted` or `already-absent`). A crash between
 * intent and outcome is resumed by the next attempt, which deletes again (a no-op) and records the outcome.
 */
async function deleteAuthAccount(cp: UnitCheckpoint, step: number, env: StepEnv): Promise<void> {
  if (cp.kind !== "request" || !cp.requestId || cp.subject?.type !== "user") return;
  if (await accountsAcrossCells(cp.requestId)) return;
  const uid = cp.subject.uid;
  const requestId = cp.requestId;
  const record = async (phase: "INTENT" | "DONE", outcome?: "deleted" | "already-absent"): Promise<boolean> =>
    db().runTransaction(async (tx) => {
      const now = await fenceStep(tx, cp, env, step);
      if (!now) return false;
      const req = await tx.get(requestRef(requestId));
      const state = req.get("authDeletion.state") as unknown;
      if (state === "DONE" || (phase === "INTENT" && state === "INTENT")) return phase === "INTENT";
      const evidence = await openEvidence(tx, cp.unitKey);
      const at = toTimestamp(env.nowMs);
      tx.update(requestRef(requestId), {
        authDeletion: { state: phase, by: env.actor.id, ...(phase === "INTENT" ? { intentAt: at } : { doneAt: at, outcome }) },
        timeline: FieldValue.arrayUnion({ at, event: phase === "INTENT" ? "AUTH_ACCOUNT_DELETE_INTENT" : "AUTH_ACCOUNT_DELETED", ...(outcome ? { detail: outcome } : {}) }),
      });
      evidence.append(
        purgeEvidence(env, cp, {
          action: phase === "INTENT" ? "AUTH_ACCOUNT_DELETE_INTENT" : "AUTH_ACCOUNT_DELETED",
          decision: { reason: "AUTHORIZED_BY_POLICY", ...(outcome ? { outcome } : {}) },
          counts: { accounts: 1 },
        }),
      );
      return true;
    }, EVIDENCE_TX);
  if (!(await record("INTENT"))) return;
  const outcome = await deleteAccount(uid);
  await record("DONE", outcome);
  log.info("purge.auth.deleted", { requestId, outcome });
}

/**
 * A request across several governed databases leaves the Auth accounts to its request of record, which deletes them
 * once, when every cell is done (cells/accounts.ts; decision 0003 across cells): neither a cell request nor the
 * record's own finalize may (docs/decisions/0036-several-databases.md). `cells` and `cellOf` are written when the
 * request is created and never change, so this read outside the finalize's transactions is as good as one inside.
 */
async function accountsAcrossCells(requestId: string): Promise<boolean> {
  return spansCells((await requestRef(requestId).get()).data());
}

/**
 * What a PURGED request stores of its "fully gone by" date: the date and what it was computed from, or why there
 * is none; and `erasureComplete: false`, the explicit flag the completion step queries on (with the date), since a
 * query never matches a document that lacks the field.
 */
export function goneByFields(goneBy: GoneBy | null): Record<string, unknown> {
  if (!goneBy) return {};
  if (goneBy.atMs === null) return { erasureComplete: false, fullyGoneByUnknown: goneBy.unknown, fullyGoneBy: FieldValue.delete(), fullyGoneByBasis: FieldValue.delete() };
  const b = goneBy.basis;
  return {
    erasureComplete: false,
    fullyGoneBy: toTimestamp(goneBy.atMs),
    fullyGoneByBasis: {
      purgedAt: toTimestamp(b.purgedAtMs),
      pitrDays: b.pitrDays,
      backupRetentionDays: b.backupRetentionDays,
      archivesRetainUntil: b.archivesRetainUntilMs === null ? null : toTimestamp(b.archivesRetainUntilMs),
      ...(b.storageSoftDeleteDays !== undefined ? { storageSoftDeleteDays: b.storageSoftDeleteDays } : {}),
      ...(b.processorsDeadlineMs !== undefined ? { processorsDeadline: toTimestamp(b.processorsDeadlineMs) } : {}),
      ...(b.exportsExpireAtMs !== undefined ? { exportsExpireAt: toTimestamp(b.exportsExpireAtMs) } : {}),
      ...(b.archivesShredAtMs !== undefined ? { archivesShredAt: toTimestamp(b.archivesShredAtMs), archiveKeyDestroyDays: b.archiveKeyDestroyDays ?? null } : {}),
    },
    fullyGoneByUnknown: FieldValue.delete(),
  };
}

/**
 * The request's stored fields finalize needs before its transaction, read once and only when needed: a user's
 * `groupId` (a member of a request group leaves the account to the group; a member's cell request in another database
 * leaves it to the primary), and whether an earlier round deleted
 * Cloud Storage objects (`objectsErased`: the date still waits out their soft delete when this round deletes none).
 * A tenant's closure in an app without storage entries reads nothing.
 */
async function requestFacts(cp: UnitCheckpoint): Promise<{ groupId: string | null; objectsDeletedEarlier: boolean; cellRequest: boolean; exportsExpireAtMs: number | null }> {
  const user = cp.subject?.type === "user";
  const storage = policy().hasStorageEntries;
  if (!cp.requestId || (!user && !storage)) return { groupId: null, objectsDeletedEarlier: false, cellRequest: false, exportsExpireAtMs: null };
  const snap = await requestRef(cp.requestId).get();
  const cellRequest = typeof snap.get("cellOf") === "string";
  // A member's cell request in another database carries the group's id too, but the account is the primary's business.
  const groupId = user && !cellRequest ? groupIdOf(snap.get("groupId")) : null;
  // An earlier round (RETAINED_UNDER_HOLD) that deleted an export while its build was under way: its parts' expiry.
  return { groupId, objectsDeletedEarlier: storage && snap.get("objectsErased") === true, cellRequest, exportsExpireAtMs: toMs(snap.get("exportsExpireAt")) };
}

/**
 * Finalize step: the final sweep (runner/late.ts), then verify the manifest. A clean verification ends the round (checkpoint DONE); for a request
 * it also decides the request's end state (`requestOutcome`): PURGED, with its "fully gone by" date
 * (requests/rules/gone-by.ts, from the archive copies the unit made), or RETAINED_UNDER_HOLD with the held
 * paths listed on the request and `heldAtGeneration`, a fence generation older than the release of every hold
 * that keeps part of it (`judgeHeldInTx`), so that the first run after those releases plans the request again.
 * A verification with findings makes the unit BLOCKED with PURGE_VERIFY_FAILED, and the next run plans it afresh. The request's move is checked against the
 * state read in the same transaction. Returns the phase reached, or null when another attempt got there first.
 */
export async function finalizeStep(planned: UnitCheckpoint, step: number, env: StepEnv, steps: Pick<Steps, "delete" | "objects">): Promise<"DONE" | "BLOCKED" | null> {
  await fire(env, { point: "beforeFinalize", unitKey: planned.unitKey, round: planned.round, step, batch: null, paths: [] });
  const found: LateFindings = { stranded: [], unplanned: [] };
  // The round's records are read twice: by the final sweep (which notes what verification must know of them as a
  // whole) and by verification, which hands each record to what the end of the round needs of them.
  const facts = new RoundFacts();
  const cp = await lateSweep(planned, step, env, steps, facts, found);
  if (!cp) return null;
  const masked: MaskedPaths = [];
  const scopeUids = cp.subject?.type === "tenant" ? new ScopeUids(cp.subject.tenantId) : null;
  const tally = await verifyUnit(cp, facts, (b) => {
    masked.push(...maskedIn(b));
    scopeUids?.offerBatch(b);
  });
  // A request is not complete while a document of its subject, refused by the rules, sits under a deleted parent.
  // Nor while a document its data map reaches was written after the plan: the next run plans it.
  if (cp.kind === "request") {
    for (const path of found.stranded) tally.findings.push({ path, problem: "LATE_FIND_STRANDED" });
    for (const path of found.unplanned) tally.findings.push({ path, problem: "LATE_FIND_UNPLANNED" });
  }
  const end = requestOutcome(tally);
  // A member of a request group: the group's account goes once, from the finalize transaction below (group-account.ts).
  // A closure across several databases: the request of record's account step takes the accounts (cells/accounts.ts).
  const { groupId, objectsDeletedEarlier, cellRequest, exportsExpireAtMs } = await requestFacts(cp);
  if (end !== "BLOCKED" && groupId === null) {
    if (cp.subject?.type === "tenant") {
      if (!cp.requestId || !(await accountsAcrossCells(cp.requestId))) await deleteTenantAccounts(cp, step, env, scopeUids ?? undefined);
    } else await deleteAuthAccount(cp, step, env);
  }
  // The user's access exports are copies of what is erased: they go with the erasure, held data or not (the hold keeps
  // the data itself). Exports live with the control plane, in the primary database: a cell request leaves them to its
  // request of record. Idempotent: a member of a request group after the first finds none.
  const exports =
    end !== "BLOCKED" && cp.requestId && cp.subject?.type === "user" && !cellRequest
      ? await eraseSubjectExports({ uid: cp.subject.uid, requestId: cp.requestId, actor: env.actor, nowMs: env.nowMs })
      : null;
  const exportsSurviveMs = Math.max(exports?.survivesUntilMs ?? 0, exportsExpireAtMs ?? 0) || null;
  // A PURGED request's "fully gone by" date: this moment, the recovery windows, and the archive copies it made.
  // Deleted objects wait out the buckets' soft delete (docs/STORAGE.md); a round that deleted none does not count it.
  const objects = tally.objectsDeleted > 0 || objectsDeletedEarlier ? { softDeleteDays: storageSettings.softDeleteDays() } : null;
  // It also waits for the deadlines of the processors the erasure notifies (docs/decisions/0039-processors.md).
  // And for export parts a build was still writing when their export was deleted (their expiry, when TTL takes them).
  const goneBy =
    end === "PURGED" && cp.requestId
      ? withExportsExpiry(
          withProcessorsDeadline(
            purgedGoneBy(env.nowMs, await archiveCopiesOf(cp.unitKey), purgeSettings.recoveryWindows(), objects),
            cp.subject ? processorsDeadlineMs(policy().registry.processors, cp.subject.type, env.nowMs) : null,
          ),
          exportsSurviveMs,
          purgeSettings.recoveryWindows(),
        )
      : null;
  // The erasure ledger hears of it before the request says PURGED: a restore cannot lose what it records.
  if (end !== "BLOCKED") await recordLedgerEntry(cp, env, goneBy?.atMs ?? null, masked);
  const counts = { gone: tally.gone, archived: tally.archived, retained: tally.retained, masked: tally.masked, findings: tally.findings.length, underHold: tally.underHoldCount };
  let takesAccount = false;
  const phase = await db().runTransaction(async (tx) => {
    const now = await fenceStep(tx, cp, env, step);
    if (!now) return null;
    const req = cp.requestId ? await tx.get(requestRef(cp.requestId)) : null;
    if (req) assertRequestMove(parseRequestState(req.get("state")), end);
    const judged = end === "RETAINED_UNDER_HOLD" ? await judgeHeldInTx(tx, now, tally) : null;
    const account = groupId !== null && end === "PURGED" ? await groupTakesAccountInTx(tx, groupId, cp.requestId!, end) : { take: false, members: 0 };
    // The processors' notices are written with the request's PURGED, by the request itself (a cell request of another
    // database leaves them to its request of record; a request retained under a hold notifies no one until it is PURGED).
    const notify = end === "PURGED" && req !== null && cp.subject && typeof req.get("cellOf") !== "string" ? { requestId: req.id, subject: noticeSubject(cp.subject) } : null;
    const existingNotices = notify ? await existingNoticesInTx(tx, notify.requestId, notify.subject.type) : new Set<string>();
    const evidence = await openEvidence(tx, cp.unitKey);
    const at = toTimestamp(env.nowMs);
    const intent = account.take && groupId !== null ? groupAccountIntent(env.actor, groupId, at) : null;
    takesAccount = intent !== null;
    if (end !== "BLOCKED") {
      const held = {
        count: tally.underHoldCount,
        paths: tally.underHold.map((h) => h.path),
        holds: [...new Map(tally.underHold.map((h) => [`${h.holdId}:${h.reasonCode}`, { holdId: h.holdId, reasonCode: h.reasonCode }])).values()],
      };
      // For a request the lease lives on the request: its release and the state change are one write.
      const request = cp.requestId
        ? {
            state: end,
            manifestHash: cp.manifestHash,
            purgeCounts: counts,
            ...(tally.objectsDeleted > 0 ? { objectsErased: true } : {}),
            // Kept on the request too, for a date computed again later (completion.ts#redateOne).
            ...(exportsSurviveMs !== null ? { exportsExpireAt: toTimestamp(exportsSurviveMs) } : {}),
            blockedReason: FieldValue.delete(),
            ...(end === "PURGED"
              ? { purgedAt: at, retainedUnderHold: FieldValue.delete(), heldAtGeneration: FieldValue.delete(), heldFenceGeneration: FieldValue.delete(), ...goneByFields(goneBy) }
              : // `heldFenceGeneration` is what rounds before `heldAtGeneration` stored (read at finalize: it could postdate a release).
                { retainedUnderHold: held, heldAtGeneration: judged!.heldAt, heldFenceGeneration: FieldValue.delete() }),
            timeline: FieldValue.arrayUnion(
              {
                at,
                event: end,
                detail: `${tally.gone} gone, ${tally.retained} retained, ${tally.masked} masked${end === "PURGED" ? "" : `, ${tally.underHoldCount} under hold`}`,
              },
              ...(intent ? [intent.timeline] : []),
            ),
            ...(intent?.fields ?? {}),
          }
        : {};
      writeCheckpoint(tx, cp, env, { phase: "DONE", nextStep: step + 1, finishedAt: at, verify: counts }, { lease: FieldValue.delete(), ...request });
      evidence.append(purgeEvidence(env, cp, { action: "PURGE_VERIFIED", decision: { reason: "MANIFEST_VERIFIED" }, counts }));
      if (notify) writeNoticesInTx(tx, notify, existingNotices, env.nowMs, evidence, env.actor);
      if (intent && groupId !== null) evidence.append(groupAccountIntentEvidence(cp, env.actor, env.nowMs, groupId, account.members));
      if (end === "RETAINED_UNDER_HOLD") {
        evidence.append(
          purgeEvidence(env, cp, {
            action: "PURGE_RETAINED_UNDER_HOLD",
            decision: { reason: "LEGAL_HOLD" },
            paths: held.paths,
            counts: { underHold: held.count },
            detail: {
              fenceGeneration: judged!.finalGeneration,
              heldAtGeneration: judged!.heldAt,
              decidedGeneration: now.fenceGeneration,
              holdIds: held.holds.map((h) => h.holdId ?? "?").join(","),
            },
          }),
        );
      }
      await fire(env, { point: "inFinalize", unitKey: cp.unitKey, round: cp.round, step, batch: null, paths: held.paths });
      return "DONE" as const;
    }
    const reason = "PURGE_VERIFY_FAILED";
    const request = cp.requestId
      ? { state: "BLOCKED", blockedReason: reason, timeline: FieldValue.arrayUnion({ at, event: "PURGE_BLOCKED", detail: reason }) }
      : {};
    writeCheckpoint(tx, cp, env, { phase: "BLOCKED", blockedReason: reason, finishedAt: at, verify: counts }, { lease: FieldValue.delete(), ...request });
    const problems: Record<string, number> = {};
    for (const f of tally.findings) problems[f.problem] = (problems[f.problem] ?? 0) + 1;
    evidence.append(
      purgeEvidence(env, cp, {
        action: "PURGE_VERIFY_FAILED",
        decision: { reason },
        paths: tally.findings.slice(0, MAX_FINDING_PATHS).map((f) => f.path),
        counts: { ...counts, ...problems },
      }),
    );
    return "BLOCKED" as const;
  }, EVIDENCE_TX);
  // The last member of a request group to end PURGED deletes the group's account, after its commit.
  if (phase === "DONE" && takesAccount && cp.subject?.type === "user") await finishGroupAccountDeletion(cp, cp.subject.uid, env.actor, env.nowMs);
  if (phase === "DONE" && end === "RETAINED_UNDER_HOLD") log.warn("purge.request.retained", { unitKey: cp.unitKey, requestId: cp.requestId, ...counts });
  else if (phase === "DONE") log.info("purge.request.done", { unitKey: cp.unitKey, requestId: cp.requestId, ...counts });
  if (phase === "BLOCKED") log.error("purge.verify.failed", { unitKey: cp.unitKey, requestId: cp.requestId, ...counts });
  return phase;
}
