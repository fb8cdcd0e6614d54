/**
 * The social example's TTL, on its own functions: registry v2 keeps notifications 30 days by Firestore's TTL, so
 * the functions generate a delete trigger for them (ttlDeleted-notifications) from the registry they enforce, with
 * no code of the example's. The emulator never sweeps, so each test stands in for the sweeper with a plain delete
 * of an expired notification, which fires the same trigger (as test/integration/ttl/trigger.test.ts does for
 * AtlasMart's sessions and events).
 */
import { beforeAll, describe, expect, it } from "vitest";
import { DAY_MS } from "../../../../functions/src/kernel/policy";
import { handleTtlDeleted, ttlTriggerTargetsByCell } from "../../../../functions/src/entrypoints/firestore/ttl-deleted";
import { inCell } from "../../../../functions/src/platform/firestore";
import { SOCIAL_ANALYTICS } from "../../../../examples/social/registry";
import { policy } from "../../../../functions/src/platform/registry";
import { ttlTriggerTargets } from "../../../../functions/src/ttl/rules";
import { clearFirestore, db, waitFor } from "../../../helpers/emulator";
import { chainHeadSeq, deleteEvent, evidenceByPath, markersByPath, putGoverned } from "../../ttl/fixtures";

/** The analytics database's physical id on this project: RETENTION_DATABASES maps nothing here, so its logical name. */
const ANALYTICS_DATABASE = SOCIAL_ANALYTICS;

/** The app has no scope kind: its documents name none. */
const NO_SCOPE = { tenantId: "" };

describe("the social example's TTL delete trigger (Functions emulator)", () => {
  beforeAll(async () => {
    await clearFirestore();
    await clearFirestore(ANALYTICS_DATABASE);
  }, 180_000);

  it("the registry in force gives notifications their trigger, and nothing of AtlasMart's", () => {
    expect(ttlTriggerTargets(policy()).map((t) => t.name)).toEqual(["notifications"]);
  });

  it("a sweeper delete of an expired notification is recorded once (TTL_DELETE), and redelivery changes nothing", async () => {
    const sentMs = Date.now() - 31 * DAY_MS;
    await putGoverned("notifications/n-old-1", { recipientId: "u-bo", kind: "FOLLOW", text: "Cy followed you." }, { ...NO_SCOPE, createdAtMs: sentMs, expireAtMs: sentMs + 30 * DAY_MS });
    const before = await db().doc("notifications/n-old-1").get();
    await db().doc("notifications/n-old-1").delete();
    const [marker] = await waitFor(async () => {
      const m = await markersByPath("notifications/n-old-1");
      return m.length > 0 && m[0]!.get("state") === "DONE" ? m : null;
    }, "the trigger's DONE marker", 120_000);
    expect(marker!.data()).toMatchObject({ classification: "SWEEPER", trigger: "ttlDeleted-notifications" });
    const evidence = await evidenceByPath("notifications/n-old-1");
    expect(evidence).toHaveLength(1);
    expect(evidence[0]).toMatchObject({
      action: "TTL_DELETE",
      eventId: marker!.id,
      paths: ["notifications/n-old-1"],
      decision: { reason: "SWEEPER", retentionClass: "notification-30d" },
      policyVersion: policy().version,
      actor: { type: "system", id: "ttlDeleted-notifications" },
    });
    expect(JSON.stringify(evidence[0])).not.toContain("u-bo");

    const notifications = ttlTriggerTargets(policy()).find((t) => t.name === "notifications")!;
    const seq = await chainHeadSeq();
    for (let i = 0; i < 5; i++) {
      const r = await handleTtlDeleted(notifications, deleteEvent(before, marker!.id, { notificationId: "n-old-1" }));
      expect(r.outcome).toBe("DUPLICATE");
    }
    expect(await evidenceByPath("notifications/n-old-1")).toHaveLength(1);
    expect(await chainHeadSeq()).toBe(seq);
  });

  it("registry v3's analytics database gets a trigger of its own on that database, and a sweeper's delete there is recorded in analytics' ledger", async () => {
    // One trigger per (database, TTL collection): the primary's by collection, analytics' named by its database too,
    // bound to its physical database (RETENTION_DATABASES; identity on this project, so the database is "analytics").
    expect(ttlTriggerTargetsByCell().map((t) => [t.cell, t.name, t.pattern])).toEqual([
      ["primary", "notifications", "notifications/{notificationId}"],
      [SOCIAL_ANALYTICS, "analytics__events", "events/{eventId}"],
    ]);
    const atMs = Date.now() - 91 * DAY_MS;
    await inCell(SOCIAL_ANALYTICS, () => putGoverned("events/ev-old-1", { uid: "u-bo", kind: "signed-in" }, { ...NO_SCOPE, createdAtMs: atMs, expireAtMs: atMs + 90 * DAY_MS }));
    await inCell(SOCIAL_ANALYTICS, () => db().doc("events/ev-old-1").delete());
    // The Firestore emulator hands the delete to the trigger whose database it is (firebase-tools 14.27 registers a v2
    // trigger with its eventFilters.database), and the handler runs in that database's cell.
    const [marker] = await waitFor(
      () =>
        inCell(SOCIAL_ANALYTICS, async () => {
          const m = await markersByPath("events/ev-old-1");
          return m.length > 0 && m[0]!.get("state") === "DONE" ? m : null;
        }),
      "the analytics trigger's DONE marker",
      120_000,
    );
    expect(marker!.data()).toMatchObject({ classification: "SWEEPER", trigger: "ttlDeleted-analytics__events" });
    const evidence = await inCell(SOCIAL_ANALYTICS, () => evidenceByPath("events/ev-old-1"));
    expect(evidence).toHaveLength(1);
    expect(evidence[0]).toMatchObject({ action: "TTL_DELETE", eventId: marker!.id, paths: ["events/ev-old-1"], decision: { reason: "SWEEPER", retentionClass: "activity-log" } });
    // Nothing of it in the primary: no marker, no evidence.
    expect(await markersByPath("events/ev-old-1")).toEqual([]);
    expect(await evidenceByPath("events/ev-old-1")).toEqual([]);
  });

  it("a notification deleted before its 30 days is UNEXPLAINED_DELETE; a held one deleted anyway is an incident", async () => {
    await putGoverned("notifications/n-early-1", { recipientId: "u-cy", kind: "COMMENT", text: "Bo commented." }, { ...NO_SCOPE, createdAtMs: Date.now(), expireAtMs: Date.now() + 30 * DAY_MS });
    await putGoverned(
      "notifications/n-held-1",
      { recipientId: "u-cy", kind: "COMMENT", text: "Ana commented." },
      { ...NO_SCOPE, createdAtMs: Date.now() - 40 * DAY_MS, expireAtMs: Date.now() - DAY_MS, legalHold: true, lifecycleState: "LEGAL_HOLD", holdIds: ["h-abuse"] },
    );
    await db().doc("notifications/n-early-1").delete();
    await db().doc("notifications/n-held-1").delete();
    const [early] = await waitFor(async () => {
      const e = await evidenceByPath("notifications/n-early-1");
      return e.length > 0 ? e : null;
    }, "UNEXPLAINED_DELETE evidence", 120_000);
    expect(early).toMatchObject({ action: "UNEXPLAINED_DELETE" });
    const [held] = await waitFor(async () => {
      const e = await evidenceByPath("notifications/n-held-1");
      return e.length > 0 ? e : null;
    }, "the held notification's incident", 120_000);
    expect(held).toMatchObject({ action: "TTL_DELETE_HELD_INCIDENT", holdId: "h-abuse", decision: { reason: "HELD_TTL_INCIDENT" } });
  });
});
