import { recordErasure } from "../../erasure/index";
import { currentCell } from "../../platform/firestore";
import { maskedFieldNames } from "../rules/batches";
import type { BatchDoc, UnitCheckpoint } from "../store";
import type { StepEnv } from "./env";

/** What a round masked, as the erasure ledger records it. */
export type MaskedPaths = { path: string; fields: string[] }[];

/** What one batch record says was masked: the paths its mask batch masked, with the fields masked on each. */
export function maskedIn(b: BatchDoc): MaskedPaths {
  if (b.kind !== "mask") return [];
  const done = new Set(b.outcome.masked);
  return b.items.filter((item) => done.has(item.path)).map((item) => ({ path: item.path, fields: maskedFieldNames(item) }));
}

/**
 * The erasure ledger's entry for a request whose erasure is done (PURGED, or RETAINED_UNDER_HOLD: what may be
 * erased is erased), written before the request says so. `masked`: what the round's mask batches masked
 * (`maskedIn` of each record, gathered as verification reads them). Idempotent: a retried finalize, a later round or
 * a replay finds the entry and checks it (erasure/ledger.ts). `fullyGoneByMs`: the request's "fully gone by" date when
 * it ends PURGED with one, else null.
 */
export async function recordLedgerEntry(cp: UnitCheckpoint, env: StepEnv, fullyGoneByMs: number | null, masked: MaskedPaths): Promise<void> {
  if (cp.kind !== "request" || !cp.requestId || !cp.subject) return;
  // Each cell of a request across several databases records its own entry (erasure/rules.ts#ledgerEntryId).
  await recordErasure({ requestId: cp.requestId, database: currentCell(), subject: cp.subject, policyVersion: cp.policyVersion, erasedAtMs: env.nowMs, masked, fullyGoneByMs });
}
