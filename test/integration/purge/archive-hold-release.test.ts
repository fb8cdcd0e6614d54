/**
 * Archive copies let go of a released hold. A tenant's closure archives its orders (registry v2); a hold that
 * lands on an order after its copy was written stops the order's delete and holds the copy too. Releasing it
 * clears the hold from the copy as well and gives the copy its expiry back from the archive's own class, so the
 * next run ends the closure PURGED with a "fully gone by" date; a copy held on its own keeps the date unknown
 * (ARCHIVE_UNDER_HOLD) only until its hold is released.
 */
import { plannedShredMs } from "../../../functions/src/shred/index";
import { Timestamp } from "firebase-admin/firestore";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useRegistryForTests } from "../../../functions/src/platform/registry";
import { loadCurrent } from "../../helpers/policy";
import { getDeletionStatusHandler } from "../../../functions/src/entrypoints/callable/get-deletion-status";
import { placeHold, releaseHoldById } from "../../../functions/src/holds/index";
import { runNightlyJob } from "../../../functions/src/jobs/nightly-purge";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { archiveIdFor } from "../../../functions/src/purge/rules/archive";
import type { PurgeHookContext } from "../../../functions/src/purge/runner/env";
import { approveTenantClosure, openDeletionRequest } from "../../../functions/src/requests/index";
import { db } from "../../helpers/emulator";
import { runNightlyPurge } from "../../../functions/src/purge/job";
import { expectChainVerifies, exists, putCustomer, putGoverned, reset, runOptions, T0 } from "./support";

const PLACER = { type: "staff" as const, id: "c-2001" };
const RELEASER = { type: "staff" as const, id: "c-2002" };
const HELD = "tenants/t-yota/orders/o-u-y1";
const OTHER = "tenants/t-yota/orders/o-u-y2";
/** audit-7y, the archive copies' own class; the default recovery windows' longer one is 35 days. */
const ARCHIVE_DAYS = 2557;
const WINDOW = 35 * DAY_MS;
const staff = { uid: "c-2001", tenantId: null, roles: ["compliance" as const] };

const run = (nowMs: number, hook?: (ctx: PurgeHookContext) => Promise<void>) => runNightlyJob(runOptions({ sweep: false, nowMs, asOfMs: nowMs, hook }));
const hold = (targetPath: string, nowMs: number) => placeHold({ targetPath, reasonCode: "LITIGATION", releaseAfterMs: null, actor: PLACER, nowMs }).then((h) => h.holdId);
const release = (holdId: string, nowMs: number) => releaseHoldById({ holdId, reason: "dispute settled", actor: RELEASER, nowMs });

async function copies() {
  const snap = await db().collection("archives").get();
  return snap.docs.map((d) => ({
    path: d.ref.path,
    sourcePath: d.get("sourcePath") as string,
    legalHold: d.get("legalHold") as boolean,
    holdIds: d.get("holdIds") as string[],
    expireAtMs: (d.get("expireAt") as Timestamp | undefined)?.toMillis() ?? null,
    retainUntilMs: (d.get("retainUntil") as Timestamp).toMillis(),
    archivedAtMs: (d.get("archivedAt") as Timestamp).toMillis(),
  }));
}

/**
 * The current registry with one more processor, a manual one that receives the tenant's records (30 days): the
 * closure's date waits for it, and must still wait for it when the request is dated again after a release.
 */
function withTenantProcessor() {
  const r = loadCurrent();
  const mirror = { name: "ledger-mirror", description: "A mirror of the tenant's ledger at an accounting vendor.", kind: "manual", instructions: "Ask the ledger mirror to delete the tenant.", receives: { tenant: ["tenant-tree"] }, deadlineDays: 30, acknowledges: "staff" };
  return { ...r, processors: [...(r.processors ?? []), mirror] } as ReturnType<typeof loadCurrent>;
}

describe("archive copies let go of a released hold", () => {
  beforeAll(() => useRegistryForTests(withTenantProcessor()));
  afterAll(() => useRegistryForTests(undefined));

  it("hold, archive, release, next run: no copy names the released hold, each has its expiry, and 'fully gone by' is a date again", async () => {
    await reset();
    await putCustomer("u-y1", { tenantId: "t-yota", messages: 1, activity: 1 });
    await putCustomer("u-y2", { tenantId: "t-yota", messages: 1, activity: 1 });
    const { request: opened } = await openDeletionRequest({ subject: { type: "tenant", tenantId: "t-yota" }, source: "staff", actor: { type: "staff", id: "ra-3001" }, nowMs: T0 });
    await approveTenantClosure(opened.requestId, PLACER, T0);
    const requestRef = db().doc(`deletionRequests/${opened.requestId}`);

    // Run 1: counsel holds an order once its copy is written. The order stays, and so does its copy, held.
    const run1 = T0 + 31 * DAY_MS;
    let onOrder = "";
    await run(run1, async (ctx) => {
      if (ctx.point === "afterArchiveWrite" && onOrder === "") onOrder = await hold(HELD, run1);
    });
    expect((await requestRef.get()).get("state")).toBe("RETAINED_UNDER_HOLD");
    expect(await exists(HELD)).toBe(true);
    const heldCopy = `archives/${archiveIdFor(HELD, T0 - 5 * DAY_MS)}`;
    const otherCopy = `archives/${archiveIdFor(OTHER, T0 - 5 * DAY_MS)}`;
    expect((await copies()).map((c) => [c.path, c.legalHold, c.holdIds, c.expireAtMs]).sort()).toEqual(
      [
        [heldCopy, true, [onOrder], null],
        [otherCopy, false, [], run1 + ARCHIVE_DAYS * DAY_MS],
      ].sort(),
    );

    // The hold is released; meanwhile someone holds the other order's copy on its own.
    await release(onOrder, run1 + DAY_MS);
    const onCopy = await hold(otherCopy, run1 + DAY_MS);

    // Run 2: the closure finishes. The released hold is on no copy; the copy held on its own keeps the date unknown.
    const run2 = run1 + 2 * DAY_MS;
    await run(run2);
    expect(await exists(HELD)).toBe(false);
    const r2 = (await requestRef.get()).data()!;
    expect(r2).toMatchObject({ state: "PURGED", fullyGoneByUnknown: "ARCHIVE_UNDER_HOLD" });
    const afterRun2 = await copies();
    for (const c of afterRun2) expect(c.holdIds, c.path).not.toContain(onOrder);
    expect(afterRun2.find((c) => c.path === heldCopy)).toMatchObject({ legalHold: false, holdIds: [], expireAtMs: run1 + ARCHIVE_DAYS * DAY_MS });
    expect(afterRun2.find((c) => c.path === otherCopy)).toMatchObject({ legalHold: true, holdIds: [onCopy], expireAtMs: null });

    // That hold is released too: the next run dates the closure again, from its copies' own end of retention.
    await release(onCopy, run2 + DAY_MS);
    const run3 = run2 + 2 * DAY_MS;
    await run(run3);
    const final = await copies();
    expect(final).toHaveLength(2);
    for (const c of final) {
      expect(c, c.path).toMatchObject({ legalHold: false, holdIds: [] });
      expect(c.holdIds, c.path).not.toContain(onOrder);
      expect(c.expireAtMs, c.path).toBe(c.archivedAtMs + ARCHIVE_DAYS * DAY_MS);
      expect(c.retainUntilMs, c.path).toBe(c.expireAtMs);
    }
    // Sealed copies: gone by their key's shred (the night after their end of retention) plus the KMS destroy delay.
    const goneByMs = Math.min(run1 + ARCHIVE_DAYS * DAY_MS + WINDOW, plannedShredMs(run1 + ARCHIVE_DAYS * DAY_MS)! + 30 * DAY_MS);
    const r3 = (await requestRef.get()).data()!;
    expect(r3.fullyGoneByUnknown).toBeUndefined();
    expect((r3.fullyGoneBy as Timestamp).toMillis()).toBe(goneByMs);
    // Dated again, it still waits for the processor the closure notified when it was purged.
    expect(r3.fullyGoneByBasis).toMatchObject({ purgedAt: Timestamp.fromMillis(run2), archivesRetainUntil: Timestamp.fromMillis(run1 + ARCHIVE_DAYS * DAY_MS), processorsDeadline: Timestamp.fromMillis(run2 + 30 * DAY_MS) });
    expect(await getDeletionStatusHandler({ requestId: opened.requestId }, staff, { nowMs: run3, refreshMs: 0 })).toMatchObject({
      fullyGoneBy: new Date(goneByMs).toISOString(),
      fullyGoneByUnknown: null,
    });
    await expectChainVerifies();
  });

  it("a copy never carries a hold without the hold's id: a source held only by a flag leaves its copy as it was", async () => {
    await reset();
    const source = "auditRecords/ar-flagged";
    await putGoverned(source, { action: "REFUND_ISSUED", actorUid: "u-1" }, { ageDays: 2600 });
    // After its copy is written, the source gets a bare flag: no hold record, no hold id (nothing a release could name).
    await runNightlyPurge(
      runOptions({
        hook: async (ctx) => {
          if (ctx.point === "afterArchiveWrite") await db().doc(source).update({ legalHold: true });
        },
      }),
    );
    // The flag still stops the delete; the copy keeps its own expiry instead of a hold no release could clear.
    expect(await exists(source)).toBe(true);
    const [copy] = await copies();
    expect(copy).toMatchObject({ sourcePath: source, legalHold: false, holdIds: [] });
    expect(copy!.expireAtMs).toBe(copy!.archivedAtMs + ARCHIVE_DAYS * DAY_MS);
    await expectChainVerifies();
  });
});
