import { recordErasure } from "../../erasure/index";
import { currentCell } from "../../platform/firestore";
import { maskedFieldNames } from "../rules/batches";
import type { UnitCheckpoint } from "../store";
import type { StepEnv } from "./env";
import { roundBatches } from "./verify";

/**
 * The erasure ledger's entry for a request whose erasure is done (PURGED, or RETAINED_UNDER_HOLD: what may be
 * erased is erased), written before the request says so. What was masked comes from the round's mask batches.
 * Idempotent: a retried finalize, a later round or a replay finds the entry and checks it (erasure/ledger.ts).
 * `fullyGoneByMs`: the request's "fully gone by" date when it ends PURGED with one, else null.
 */
export async function recordLedgerEntry(cp: UnitCheckpoint, env: StepEnv, fullyGoneByMs: number | null): Promise<void> {
  if (cp.kind !== "request" || !cp.requestId || !cp.subject) return;
  const masked: { path: string; fields: string[] }[] = [];
  for await (const b of roundBatches(cp)) {
    if (b.kind !== "mask") continue;
    const done = new Set(b.outcome.masked);
    for (const item of b.items) if (done.has(item.path)) masked.push({ path: item.path, fields: maskedFieldNames(item) });
  }
  // Each cell of a request across several databases records its own entry (erasure/rules.ts#ledgerEntryId).
  await recordErasure({ requestId: cp.requestId, database: currentCell(), subject: cp.subject, policyVersion: cp.policyVersion, erasedAtMs: env.nowMs, masked, fullyGoneByMs });
}
