/**
 * The console's lists name people, not uids: the holds list names who placed and released each hold and can be
 * filtered by a staff member's email; the evidence of a release shows the reason its officer typed, checked against
 * the hash the entry keeps (and flagged when the hold's record no longer matches it); a customer is never named.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { seedDemo } from "../../../examples/atlasmart/seed";
import { explainDeletionHandler } from "../../../functions/src/entrypoints/callable/explain-deletion";
import { listRetentionHoldsHandler } from "../../../functions/src/entrypoints/callable/list-retention-holds";
import type { Caller } from "../../../functions/src/entrypoints/callable/shared";
import { DomainError } from "../../../functions/src/kernel/errors";
import { placeHold, releaseHoldById } from "../../../functions/src/holds/index";
import { staffNames } from "../../../functions/src/platform/people";
import { clearAuth, clearFirestore, db } from "../../helpers/emulator";

const CLARA: Caller = { uid: "c-2001", tenantId: null, roles: ["compliance"] };
const TARGET = "tenants/t-acme/orders/o-1002";

describe("staff by name in the console's callables", () => {
  let holdId: string;

  beforeAll(async () => {
    await clearFirestore();
    await clearAuth();
    await seedDemo({ nowMs: Date.now() });
    ({ holdId } = await placeHold({ targetPath: TARGET, reasonCode: "FINANCE_RETENTION", releaseAfterMs: null, actor: { type: "staff", id: "c-2001" }, nowMs: Date.now() }));
    await releaseHoldById({ holdId, reason: "tax year closed", actor: { type: "staff", id: "c-2002" }, nowMs: Date.now() });
  });

  it("the holds history names the placer and the releaser, and keeps the reason typed at release", async () => {
    const page = await listRetentionHoldsHandler({ state: "RELEASED" }, CLARA);
    const hold = page.items.find((h) => h.holdId === holdId)!;
    expect(hold).toMatchObject({ placedBy: "c-2001", releasedBy: "c-2002", releaseReason: "tax year closed" });
    expect(page.people).toEqual({
      "c-2001": { name: "Clara (compliance)", email: "clara.compliance@atlasmart.test" },
      "c-2002": { name: "Dev (compliance)", email: "dev.compliance@atlasmart.test" },
    });
  });

  it("filters by a staff member's email; an email no staff account has is refused, a customer's too", async () => {
    const byEmail = await listRetentionHoldsHandler({ state: "RELEASED", placedBy: "clara.compliance@atlasmart.test" }, CLARA);
    expect(byEmail.items.map((h) => h.holdId)).toEqual([holdId]);
    expect((await listRetentionHoldsHandler({ state: "RELEASED", placedBy: "dev.compliance@atlasmart.test" }, CLARA)).items).toEqual([]);
    for (const email of ["nobody@atlasmart.test", "ada@atlasmart.test"]) {
      await expect(listRetentionHoldsHandler({ state: "RELEASED", placedBy: email }, CLARA)).rejects.toSatisfy((e: unknown) => e instanceof DomainError && e.reason === "STAFF_NOT_FOUND");
    }
  });

  it("a customer is never named, and an unknown uid is left out", async () => {
    expect(await staffNames(["u-1001", "c-2001", "no-such-uid", "c-2001"])).toEqual({ "c-2001": { name: "Clara (compliance)", email: "clara.compliance@atlasmart.test" } });
  });

  it("the release's evidence shows the typed reason, checked against its hash, and names the officer", async () => {
    const explained = await explainDeletionHandler({ path: TARGET }, CLARA);
    const released = explained.entries.find((e) => e.action === "HOLD_RELEASED")!;
    expect(released.reason).toBe("FINANCE_RETENTION");
    expect(released.statement).toEqual({ kind: "releaseReason", text: "tax year closed", matchesEvidence: true });
    expect(explained.entries.filter((e) => e.action !== "HOLD_RELEASED").every((e) => e.statement === null)).toBe(true);
    expect(explained.people["c-2002"]).toEqual({ name: "Dev (compliance)", email: "dev.compliance@atlasmart.test" });
    // A record edited after the fact no longer matches what the evidence kept: the console flags it.
    await db().doc(`retentionHolds/${holdId}`).update({ releaseReason: "something else" });
    const edited = (await explainDeletionHandler({ path: TARGET }, CLARA)).entries.find((e) => e.action === "HOLD_RELEASED")!;
    expect(edited.statement).toEqual({ kind: "releaseReason", text: "something else", matchesEvidence: false });
  });
});
