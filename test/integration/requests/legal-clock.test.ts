/**
 * Legal clocks, in-process on the emulator (docs/decisions/0040-legal-clocks-and-access.md): each user request carries
 * the deadline of the law the registry assigns (by a field of the user's document, by scope, else the default) from
 * the moment it is opened; staff extend it once within the law's limit with a written reason, which is evidence (a
 * refusal writes nothing); the status, the staff list and the audit report it. A request group's clocks:
 * legal-clock-group.test.ts.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { seedDemo } from "../../../examples/atlasmart/seed";
import { scanRetention } from "../../../functions/src/audit/index";
import { extendRequestDeadlineHandler } from "../../../functions/src/entrypoints/callable/extend-request-deadline";
import { getDeletionStatusHandler } from "../../../functions/src/entrypoints/callable/get-deletion-status";
import { listDeletionRequestsHandler } from "../../../functions/src/entrypoints/callable/list-deletion-requests";
import { requestAccountDeletionHandler } from "../../../functions/src/entrypoints/callable/request-account-deletion";
import type { Caller } from "../../../functions/src/entrypoints/callable/shared";
import { verifyEvidence } from "../../../functions/src/evidence/index";
import { settings } from "../../../functions/src/platform/settings";
import { addPeriod } from "../../../functions/src/requests/rules/legal-clock";
import { clearAuth, clearFirestore, db } from "../../helpers/emulator";
import { refusal } from "../../helpers/refusal";

const DAY = 86_400_000;
const CLARA: Caller = { uid: "c-2001", tenantId: null, roles: ["compliance"] };
const RITA: Caller = { uid: "r-3001", tenantId: null, roles: ["retention-admin"] };
const REASON = "The request spans three years of orders and two archive systems.";
const iso = (ms: number) => new Date(ms).toISOString();

/** Every request and every evidence entry, as stored: what a refusal must leave as it was. */
async function requestsAndEvidence(): Promise<unknown> {
  const read = async (c: string) => (await db().collection(c).get()).docs.map((d) => [d.ref.path, d.data()]).sort();
  return { requests: await read("deletionRequests"), evidence: await read("deletionAudits") };
}

describe("legal clocks on AtlasMart's requests (its published registry, v7)", () => {
  const ADA: Caller = { uid: "u-1001", tenantId: "t-acme", roles: [] };
  const BEN: Caller = { uid: "u-1002", tenantId: "t-acme", roles: [] };

  let t0: number;
  beforeEach(async () => {
    await clearFirestore(settings.databaseId());
    await clearAuth();
    t0 = Date.now();
    await seedDemo({ nowMs: t0, withAuth: false });
    // Ben's directory entry says he lives in California: his requests run on the CCPA's clock.
    await db().doc("userDirectory/u-1002").update({ region: "US-CA" });
  });

  it("starts each request on its law's clock at its opening: GDPR by default, CCPA by the user's field", async () => {
    const before = Date.now();
    const ada = await requestAccountDeletionHandler({}, ADA);
    const ben = await requestAccountDeletionHandler({}, BEN);
    const after = Date.now();
    const stored = async (id: string) => (await db().doc(`deletionRequests/${id}`).get()).data()!;
    const a = await stored(ada.requestId);
    const b = await stored(ben.requestId);
    expect(a.legalClock).toMatchObject({ law: "gdpr", name: "GDPR Art. 12(3)", extension: null });
    expect(b.legalClock).toMatchObject({ law: "ccpa", extension: null });
    const opened = (a.requestedAt as { toMillis(): number }).toMillis();
    expect(opened).toBeGreaterThanOrEqual(before);
    expect(opened).toBeLessThanOrEqual(after);
    // The request's due date is the clock's, from the moment it was opened.
    expect((a.dueAt as { toMillis(): number }).toMillis()).toBe(addPeriod(opened, { months: 1 }));
    expect(((a.legalClock as { limit: { toMillis(): number } }).limit).toMillis()).toBe(addPeriod(addPeriod(opened, { months: 1 }), { months: 2 }));
    expect((b.dueAt as { toMillis(): number }).toMillis() - (b.requestedAt as { toMillis(): number }).toMillis()).toBe(45 * DAY);

    const status = await getDeletionStatusHandler({ requestId: ada.requestId }, ADA, { nowMs: opened + DAY, refreshMs: settings.statusRefreshMs() });
    expect(status.legalClock).toMatchObject({ law: "gdpr", outcome: "open", dueAt: iso(addPeriod(opened, { months: 1 })), extension: null });
    expect(status.legalClock!.daysLeft).toBeGreaterThanOrEqual(26);
    // The staff list shows days left and the law, most urgent first: Ben (45 days) after Ada (a month).
    const list = await listDeletionRequestsHandler({}, CLARA, opened + DAY);
    expect(list.items.map((i) => [i.requestId, i.law, i.extended])).toEqual([
      [ada.requestId, "gdpr", false],
      [ben.requestId, "ccpa", false],
    ]);
    expect(list.items.map((i) => i.daysLeft)).toEqual([...list.items.map((i) => i.daysLeft)].sort((x, y) => x! - y!));
    // Opened a moment after Ada's, a day ago: 44 whole days left.
    expect(list.items[1]!.daysLeft).toBe(44);
  });

  it("extends once within the law's limit with a written reason, recorded as evidence; refused without a reason, twice, beyond the limit, or by a user", async () => {
    const { requestId } = await requestAccountDeletionHandler({}, ADA);
    const stored = (await db().doc(`deletionRequests/${requestId}`).get()).data()!;
    const dueMs = (stored.dueAt as { toMillis(): number }).toMillis();
    const limitMs = addPeriod(dueMs, { months: 2 });

    const before = await requestsAndEvidence();
    expect(await refusal(extendRequestDeadlineHandler({ requestId, reason: "" }, CLARA))).toBe("invalid-argument/EXTENSION_REASON_REQUIRED");
    expect(await refusal(extendRequestDeadlineHandler({ requestId, reason: "busy" }, CLARA))).toBe("invalid-argument/EXTENSION_REASON_REQUIRED");
    expect(await refusal(extendRequestDeadlineHandler({ requestId, reason: REASON, until: iso(limitMs + 1) }, CLARA))).toBe("failed-precondition/BEYOND_LEGAL_LIMIT");
    expect(await refusal(extendRequestDeadlineHandler({ requestId, reason: REASON }, ADA))).toBe("permission-denied/NOT_STAFF");
    expect(await refusal(extendRequestDeadlineHandler({ requestId: "no-such-request", reason: REASON }, CLARA))).toBe("not-found/REQUEST_NOT_FOUND");
    expect(await requestsAndEvidence()).toEqual(before);

    const until = dueMs + 20 * DAY;
    const out = await extendRequestDeadlineHandler({ requestId, reason: REASON, until: iso(until) }, CLARA);
    expect(out.extended).toEqual([{ requestId, law: "gdpr", originalDueAt: iso(dueMs), dueAt: iso(until) }]);
    const after = (await db().doc(`deletionRequests/${requestId}`).get()).data()!;
    expect((after.dueAt as { toMillis(): number }).toMillis()).toBe(until);
    expect((after.legalClock as { extension: unknown }).extension).toMatchObject({ by: "c-2001", reason: REASON });
    const entries = (await db().collection("deletionAudits").where("action", "==", "DEADLINE_EXTENDED").get()).docs.map((d) => d.data());
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ requestId, actor: { type: "staff", id: "c-2001" }, detail: { law: "gdpr", originalDueAt: iso(dueMs), dueAt: iso(until), reasonText: REASON } });
    expect((await verifyEvidence()).ok).toBe(true);

    // Once only, by anyone.
    const extended = await requestsAndEvidence();
    expect(await refusal(extendRequestDeadlineHandler({ requestId, reason: REASON }, RITA))).toBe("failed-precondition/ALREADY_EXTENDED");
    expect(await requestsAndEvidence()).toEqual(extended);

    // The subject sees the new deadline and why; staff also see who extended it.
    const told = await getDeletionStatusHandler({ requestId }, ADA, { nowMs: Date.now(), refreshMs: settings.statusRefreshMs() });
    expect(told.legalClock).toMatchObject({ dueAt: iso(until), originalDueAt: iso(dueMs), extension: { dueAt: iso(until), reason: REASON } });
    expect(told.legalClock!.extension).not.toHaveProperty("by");
    const staff = await getDeletionStatusHandler({ requestId }, CLARA, { nowMs: Date.now(), refreshMs: settings.statusRefreshMs() });
    expect(staff.legalClock!.extension).toMatchObject({ by: "c-2001" });
    expect(staff.timeline.map((t) => t.event)).toContain("DEADLINE_EXTENDED");
  });

  it("the audit reports a breach: a request owed past its deadline, and one answered after it; it counts those answered in time", async () => {
    const ada = await requestAccountDeletionHandler({}, ADA);
    const ben = await requestAccountDeletionHandler({}, BEN);
    const adaDue = ((await db().doc(`deletionRequests/${ada.requestId}`).get()).get("dueAt") as { toMillis(): number }).toMillis();
    const benDue = ((await db().doc(`deletionRequests/${ben.requestId}`).get()).get("dueAt") as { toMillis(): number }).toMillis();
    // Ada's erasure was answered a day late; Ben's is still owed when the audit runs after his deadline.
    const answered = (state: string, atMs: number) => ({ state, timeline: [{ at: new Date(atMs), event: state, detail: "test" }] });
    await db().doc(`deletionRequests/${ada.requestId}`).update(answered("PURGED", adaDue + DAY));
    const audit = await scanRetention({ nowMs: benDue + DAY, skipSubjects: true });
    const mine = audit.findings.filter((f) => f.path.startsWith("deletionRequests/"));
    expect(new Map(mine.map((f) => [f.path, f.code]))).toEqual(
      new Map([
        [`deletionRequests/${ada.requestId}`, "DEADLINE_MISSED"],
        [`deletionRequests/${ben.requestId}`, "OVERDUE_REQUEST"],
      ]),
    );
    expect(mine.find((f) => f.code === "DEADLINE_MISSED")!.detail).toContain("1d after its gdpr deadline");
    expect(audit.stats.deadlines).toEqual({ answered: 1, withinDeadline: 0, late: 1 });
    // Answered in time instead: counted, no finding.
    await db().doc(`deletionRequests/${ada.requestId}`).update(answered("RETAINED_UNDER_HOLD", adaDue - DAY));
    const again = await scanRetention({ nowMs: adaDue, skipSubjects: true });
    expect(again.byCode.DEADLINE_MISSED).toBe(0);
    expect(again.stats.deadlines).toEqual({ answered: 1, withinDeadline: 1, late: 0 });
  });
});
