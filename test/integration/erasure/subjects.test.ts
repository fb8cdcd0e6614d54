/**
 * Finding the subjects the erasure ledger names in a database: by path, by foreign key, under any parent, and a
 * tenant whose own document is gone while its subcollections are not.
 */
import { Timestamp } from "firebase-admin/firestore";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findLedgerMatches, type LedgerEntry } from "../../../functions/src/erasure/index";
import { keyedSubjectHash } from "../../../functions/src/evidence/index";
import { clearFirestore, db } from "../../helpers/emulator";
import { putGoverned, reset } from "../purge/support";

const LEDGER = "ledger-subjects";

const entry = (requestId: string, kind: "user" | "tenant", id: string, tenantId: string | null, erasedAtMs = 1_000): LedgerEntry => ({
  requestId,
  subjectKind: kind,
  subjectHash: keyedSubjectHash(id),
  tenantHash: tenantId === null ? null : keyedSubjectHash(tenantId),
  policyVersion: "v1",
  erasedAtMs,
  masked: [],
  fullyGoneByMs: null,
});

describe("subjects the ledger names", () => {
  const previous = process.env.RETENTION_LEDGER_DATABASE_ID;
  beforeAll(async () => {
    process.env.RETENTION_LEDGER_DATABASE_ID = LEDGER;
    await reset();
    await clearFirestore(LEDGER);
  });
  afterAll(() => {
    if (previous === undefined) delete process.env.RETENTION_LEDGER_DATABASE_ID;
    else process.env.RETENTION_LEDGER_DATABASE_ID = previous;
  });

  it("finds a user known only by a message they wrote, a tenant with no document of its own, and nobody else", async () => {
    // u-m1 left one message in t-one and nothing else; t-gone's own document is missing, its users are not.
    await putGoverned("tenants/t-one/orders/o-1/messages/m-1", { authorId: "u-m1", text: "hi" }, { tenantId: "t-one" });
    await putGoverned("tenants/t-gone/users/u-g1", { uid: "u-g1", displayName: "G" }, { tenantId: "t-gone" });
    await putGoverned("activity/a-x", { subjectUid: "u-other", type: "X" }, { tenantId: "t-one" });
    const ledger = [
      entry("r-user", "user", "u-m1", "t-one"),
      // The same uid erased in another tenant: not this subject.
      entry("r-elsewhere", "user", "u-other", "t-two"),
      entry("r-tenant", "tenant", "t-gone", null, 5_000),
      entry("r-absent", "tenant", "t-never", null),
    ];
    await Promise.all(
      ledger.map(({ erasedAtMs, fullyGoneByMs: _, ...e }) => db(LEDGER).collection("erasureLedger").doc(e.requestId).set({ ...e, erasedAt: Timestamp.fromMillis(erasedAtMs), fullyGoneBy: null, schema: 1 })),
    );
    const { entries, matches } = await findLedgerMatches();
    expect(entries).toBe(4);
    expect(matches.map((m) => [m.subject, m.entry.requestId])).toEqual([
      [{ type: "user", uid: "u-m1", tenantId: "t-one" }, "r-user"],
      [{ type: "tenant", tenantId: "t-gone" }, "r-tenant"],
    ]);
    expect((await db().doc("tenants/t-gone").get()).exists).toBe(false);
  });
});
