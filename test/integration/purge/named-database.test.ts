import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runNightlyPurge, type UnitReport } from "../../../functions/src/purge/job";
import { clearAuth, clearFirestore, db } from "../../helpers/emulator";
import { allGovernedPaths, expectChainVerifies, expectDeletionsExplained, hold, putCustomer, putSession, requestDeletion, runOptions } from "./support";

const NAMED = "retention-eu";
/** Another database in the same project, which must see none of the purge. */
const UNTOUCHED = "(default)";

describe("named database", () => {
  const previous = process.env.RETENTION_DATABASE_ID;

  beforeAll(async () => {
    process.env.RETENTION_DATABASE_ID = NAMED;
    await clearFirestore(NAMED);
    await clearFirestore(UNTOUCHED);
    await clearAuth();
  });

  afterAll(() => {
    if (previous === undefined) delete process.env.RETENTION_DATABASE_ID;
    else process.env.RETENTION_DATABASE_ID = previous;
  });

  it("purges in the configured database and touches nothing in (default)", async () => {
    await putCustomer("u-61", { messages: 2, activity: 3 });
    await putSession("s-old", "u-62", 40);
    await hold("activity/a-u-61-01");
    const requestId = await requestDeletion("u-61");
    const before = await allGovernedPaths();
    const summary = await runNightlyPurge(runOptions({ batchSize: 2 }));
    const units = summary.units as UnitReport[];
    expect(units.find((u) => u.unitKey === requestId)?.outcome).toBe("DONE");
    expect(units.find((u) => u.unitKey === "sweep-sessions")?.outcome).toBe("DONE");
    // The held activity copy is the one thing left: the erasure waits for its hold.
    expect((await db(NAMED).doc(`deletionRequests/${requestId}`).get()).get("state")).toBe("RETAINED_UNDER_HOLD");
    const after = await allGovernedPaths();
    expect(after.has("activity/a-u-61-01")).toBe(true);
    const gone = [...before].filter((p) => !after.has(p));
    expect(gone).toEqual(expect.arrayContaining(["tenants/t-acme/users/u-61", "sessions/s-old", "sessions/s-old/tokens/tk-s-old", "userDirectory/u-61"]));
    const entries = await expectChainVerifies();
    await expectDeletionsExplained(entries, gone);
    // The other database saw none of it: no purge records, no purge evidence, none of the data. (With the
    // functions emulator running, its Auth backstop may write there for other suites' users: only the
    // purge's own traces are looked for.)
    const other = db(UNTOUCHED);
    expect((await other.collection("retentionJobs").get()).docs.map((d) => d.id).filter((id) => id.startsWith("purge-"))).toEqual([]);
    const actions = (await other.collection("deletionAudits").get()).docs.map((d) => String(d.get("action")));
    expect(actions.filter((a) => /^(PURGE|ARCHIVE|AUTH_ACCOUNT)/.test(a))).toEqual([]);
    expect((await other.doc(`deletionRequests/${requestId}`).get()).exists).toBe(false);
    expect((await other.collection("activity").get()).size).toBe(0);
  });
});
