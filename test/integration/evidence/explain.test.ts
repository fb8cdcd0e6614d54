/**
 * "Why was this deleted, and who allowed it?" on a sharded ledger: the entries that say who allowed an erasure
 * (the request, the second person's approval of a tenant's closure) are found however many batch entries of the
 * same request sort before them. A large erasure's PURGE_BATCH entries are spread over many chains, and ids order
 * the ledger chain by chain.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { explainEvidence } from "../../../functions/src/evidence/explain";
import type { EvidenceBody } from "../../../functions/src/evidence/rules";
import { recordEvidence, shardOfKey } from "../../../functions/src/evidence/store";
import { clearFirestore } from "../../helpers/emulator";

const PATH = "tenants/t-wide/orders/o-0";
const body = (action: string, requestId: string, extra: Partial<EvidenceBody> = {}): EvidenceBody => ({
  action,
  actor: { type: "system", id: "nightlyPurge" },
  decision: { reason: "AUTHORIZED_BY_POLICY" },
  policyVersion: "v2",
  atMs: 1_800_000_000_000,
  requestId,
  ...extra,
});

/** The first candidate key (`${prefix}${i}`) whose chain `accept`s. */
function keyWhere(prefix: string, accept: (shard: string) => boolean, from = 0): { key: string; next: number } {
  for (let i = from; ; i++) if (accept(shardOfKey(`${prefix}${i}`))) return { key: `${prefix}${i}`, next: i + 1 };
}

describe("explain on a sharded ledger", () => {
  beforeEach(() => clearFirestore());

  it("finds who allowed an erasure behind more than a page of its own batch entries in chains that sort first", async () => {
    // The request's own chain sorts late; 240 batch entries of the same request go to chains that sort before it.
    const { key: requestId } = keyWhere("req-wide-", (s) => s >= "s0400");
    const requestChain = shardOfKey(requestId);
    await recordEvidence(requestId, body("DELETION_REQUESTED", requestId, { actor: { type: "staff", id: "r-3001" }, decision: { reason: "TENANT_CLOSURE" } }));
    await recordEvidence(requestId, body("TENANT_CLOSURE_APPROVED", requestId, { actor: { type: "staff", id: "c-2001" }, decision: { reason: "TENANT_CLOSURE" } }));
    let next = 0;
    for (let i = 0; i < 240; i++) {
      const found = keyWhere(`${requestId}/batch/b-`, (s) => s < requestChain, next);
      next = found.next;
      await recordEvidence(found.key, body("PURGE_BATCH", requestId, { paths: [`tenants/t-wide/orders/o-${i}`] }));
    }

    const r = await explainEvidence({ kind: "path", value: PATH });
    expect(r.entries.filter((e) => e.role === "match").map((e) => e.action)).toEqual(["PURGE_BATCH"]);
    const context = r.entries.filter((e) => e.role === "context").map((e) => [e.action, e.actor.id]);
    expect(context).toEqual(expect.arrayContaining([["DELETION_REQUESTED", "r-3001"], ["TENANT_CLOSURE_APPROVED", "c-2001"]]));
    expect(r.summary.some((s) => s.startsWith("allowed by: ") && s.includes("TENANT_CLOSURE_APPROVED by staff c-2001"))).toBe(true);
    expect(r.verification.ok).toBe(true);
  });
});
