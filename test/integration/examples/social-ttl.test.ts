/**
 * The social example's TTL, in-process: registry v2 keeps notifications 30 days by Firestore's TTL. The delete
 * handler the generated trigger runs (handleTtlDeleted), called with synthetic events on the example's own
 * database: a sweep recorded once however often and however concurrently the event comes; a notification deleted
 * before its time, and a held one, recorded as what they are. A hold on a notification takes its TTL value away
 * (Firestore's sweeper obeys no hold) and its release gives it back. The real trigger on the Functions emulator:
 * social-functions/ttl-trigger.test.ts.
 */
import type { Timestamp } from "firebase-admin/firestore";
import { beforeAll, describe, expect, it } from "vitest";
import { handleTtlDeleted } from "../../../functions/src/entrypoints/firestore/ttl-deleted";
import { placeHold, releaseHoldById } from "../../../functions/src/holds/index";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { writeGoverned } from "../../../functions/src/platform/governed-repo";
import { policy } from "../../../functions/src/platform/registry";
import { ttlTriggerTargets } from "../../../functions/src/ttl/rules";
import { SOCIAL_DATABASE } from "../../../examples/social/registry";
import { NO_SCOPE } from "../../../examples/social/seed";
import { clearFirestore, db } from "../../helpers/emulator";
import { onSocialExample } from "../../helpers/social";
import { deleteEvent, evidenceByPath, markersByPath } from "../ttl/fixtures";

onSocialExample();

const expiry = async (path: string): Promise<number | null> => ((await db().doc(path).get()).get("expireAt") as Timestamp | null)?.toMillis() ?? null;

/** Deletes a stored notification the way the sweeper would and returns the event the trigger would get. */
async function sweep(id: string, eventId: string) {
  const snap = await db().doc(`notifications/${id}`).get();
  expect(snap.exists).toBe(true);
  await db().doc(`notifications/${id}`).delete();
  return deleteEvent(snap, eventId, { notificationId: id });
}

describe("the social example's TTL, in-process", () => {
  beforeAll(async () => {
    expect(db().databaseId).toBe(SOCIAL_DATABASE);
    await clearFirestore(SOCIAL_DATABASE);
  });

  it("the registry gives notifications a 30-day TTL value from their writing, and a trigger target", async () => {
    const sentMs = Date.now() - 10 * DAY_MS;
    await writeGoverned("notifications/n-ttl-1", { recipientId: "u-bo", kind: "FOLLOW", text: "Ana followed you." }, NO_SCOPE, sentMs);
    expect(await expiry("notifications/n-ttl-1")).toBe(sentMs + 30 * DAY_MS);
    expect((await db().doc("notifications/n-ttl-1").get()).get("retentionClass")).toBe("notification-30d");
    expect(ttlTriggerTargets(policy()).map((t) => t.pattern)).toEqual(["notifications/{notificationId}"]);
  });

  it("an expired notification's sweep is recorded once, though its event comes eight times at once", async () => {
    const sentMs = Date.now() - 31 * DAY_MS;
    await writeGoverned("notifications/n-ttl-2", { recipientId: "u-cy", kind: "COMMENT", text: "Bo commented." }, NO_SCOPE, sentMs);
    const target = ttlTriggerTargets(policy()).find((t) => t.name === "notifications")!;
    const event = await sweep("n-ttl-2", "evt-social-sweep-1");
    const results = await Promise.all(Array.from({ length: 8 }, () => handleTtlDeleted(target, event)));
    expect(results.filter((r) => r.outcome !== "DUPLICATE")).toHaveLength(1);
    expect(await markersByPath("notifications/n-ttl-2")).toHaveLength(1);
    const evidence = await evidenceByPath("notifications/n-ttl-2");
    expect(evidence.map((e) => ({ action: e.action, reason: e.decision?.reason, cls: e.decision?.retentionClass }))).toEqual([{ action: "TTL_DELETE", reason: "SWEEPER", cls: "notification-30d" }]);
  });

  it("a delete before the 30 days is UNEXPLAINED_DELETE; a held notification deleted anyway is a held-delete incident", async () => {
    const target = ttlTriggerTargets(policy()).find((t) => t.name === "notifications")!;
    await writeGoverned("notifications/n-ttl-3", { recipientId: "u-cy", kind: "COMMENT", text: "Ana commented." }, NO_SCOPE, Date.now());
    await handleTtlDeleted(target, await sweep("n-ttl-3", "evt-social-early-1"));
    expect((await evidenceByPath("notifications/n-ttl-3")).map((e) => e.action)).toEqual(["UNEXPLAINED_DELETE"]);

    await writeGoverned("notifications/n-ttl-4", { recipientId: "u-bo", kind: "FOLLOW", text: "Cy followed you." }, NO_SCOPE, Date.now() - 40 * DAY_MS);
    const { holdId } = await placeHold({ targetPath: "notifications/n-ttl-4", reasonCode: "ABUSE_INVESTIGATION", releaseAfterMs: null, actor: { type: "staff", id: "s-dana" }, nowMs: Date.now() });
    // The hold took its TTL value away, so whoever deleted it was not the sweeper: an incident, with the hold named.
    await handleTtlDeleted(target, await sweep("n-ttl-4", "evt-social-held-1"));
    const entries = await evidenceByPath("notifications/n-ttl-4");
    expect(entries.map((e) => e.action).sort()).toEqual(["HELD_DELETE_INCIDENT", "HOLD_PLACED"]);
    expect(entries.find((e) => e.action === "HELD_DELETE_INCIDENT")).toMatchObject({ holdId, decision: { reason: "HELD_DELETE_INCIDENT" } });
  });

  it("a hold takes a notification's TTL value away, so the sweeper cannot take it; the release gives it back", async () => {
    const sentMs = Date.now() - 5 * DAY_MS;
    await writeGoverned("notifications/n-ttl-5", { recipientId: "u-ana", kind: "COMMENT", text: "Cy commented." }, NO_SCOPE, sentMs);
    const { holdId } = await placeHold({ targetPath: "notifications/n-ttl-5", reasonCode: "ABUSE_INVESTIGATION", releaseAfterMs: null, actor: { type: "staff", id: "s-dana" }, nowMs: Date.now() });
    expect(await expiry("notifications/n-ttl-5")).toBeNull();
    expect((await db().doc("notifications/n-ttl-5").get()).get("legalHold")).toBe(true);
    await releaseHoldById({ holdId, reason: "report closed", actor: { type: "staff", id: "s-dana" }, nowMs: Date.now() });
    expect(await expiry("notifications/n-ttl-5")).toBe(sentMs + 30 * DAY_MS);
  });
});
