import type { z } from "zod";
import { ExplainDeletionInput } from "../../contract/evidence";
import { explainQueryOf } from "../../evidence/index";
import { explainAcrossCells } from "../../cells/index";
import { releaseReasonsOf } from "../../holds/index";
import { hashCanonical } from "../../kernel/canonical";
import { staffNames } from "../../platform/people";
import { callable, requireRole, type Caller } from "./shared";

export { ExplainDeletionInput };

/**
 * "Why was this deleted, and who allowed it?": compliance reads the evidence about a path, a request or a
 * subject, with the entries that authorised it and whether they verify. About a path, an entry's other paths
 * (a purge batch names other subjects' documents too) are not shown. A hold release's entry keeps only the hash
 * of the reason its officer typed: the reason is read from the hold's record and checked against that hash. The
 * staff who acted are named.
 */
export async function explainDeletionHandler(input: z.infer<typeof ExplainDeletionInput>, caller: Caller) {
  requireRole(caller, "compliance");
  const query = explainQueryOf(input);
  // Every governed database's ledger, database by database (or the one `database` names).
  const result = await explainAcrossCells(query, { pageSize: input.pageSize, cursor: input.cursor, verify: input.verify, ...(input.database !== undefined ? { database: input.database } : {}) });
  const released = result.entries.filter((e) => e.action === "HOLD_RELEASED" && e.holdId !== null);
  const reasons = await releaseReasonsOf(released.map((e) => e.holdId!));
  const entries = result.entries.map((e) => {
    const text = e.action === "HOLD_RELEASED" && e.holdId !== null ? reasons.get(e.holdId) : undefined;
    return {
      ...e,
      statement: text === undefined ? null : { kind: "releaseReason" as const, text, matchesEvidence: hashCanonical({ releaseReason: text }) === e.detail.releaseReasonHash },
    };
  });
  // Who acted, and who approved what a system entry did (a brake approval's approver, in the entry's detail).
  const named = entries.flatMap((e) => [e.actor.type === "staff" ? e.actor.id : null, e.detail.approvedBy, e.detail.approver]);
  const people = await staffNames(named.filter((u): u is string => typeof u === "string"));
  return { ...result, entries, people };
}

/** A whole-chain verification walks every entry: it gets the scheduled jobs' timeout, not a callable's 60 s. */
export const explainDeletion = callable("explainDeletion", ExplainDeletionInput, explainDeletionHandler, { timeoutSeconds: 540, memory: "512MiB" });
