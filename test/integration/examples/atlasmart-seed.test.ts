import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEMO_DOCS, DEMO_USERS } from "../../../examples/atlasmart/data";
import { SCENARIO_CLOSED_TENANT, SCENARIO_SUBJECTS, seedDemoScenario } from "../../../examples/atlasmart/scenario";
import { seedDemo } from "../../../examples/atlasmart/seed";
import { getDeletionStatusHandler } from "../../../functions/src/entrypoints/callable/get-deletion-status";
import { listBrakeRunsHandler } from "../../../functions/src/entrypoints/callable/list-brake-runs";
import { listDeletionRequestsHandler } from "../../../functions/src/entrypoints/callable/list-deletion-requests";
import { verifyEvidence } from "../../../functions/src/evidence/index";
import { policy } from "../../../functions/src/platform/registry";
import { getAuth } from "firebase-admin/auth";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { adminApp, clearAuth, clearFirestore, db } from "../../helpers/emulator";
import example from "../../../examples/atlasmart/example.json";
import { startDemoWebhook } from "../../../scripts/demo-webhook.mjs";

async function snapshotAll(): Promise<Record<string, unknown>> {
  const snaps = await db().getAll(...DEMO_DOCS.map((d) => db().doc(d.path)));
  return Object.fromEntries(snaps.map((s) => [s.ref.path, s.data()]));
}

describe("seed-demo", () => {
  // The local webhook `npm start` runs for the example's demo processor (scripts/demo-webhook.mjs, example.json
  // `demoWebhook`), pointed at as the harness points it: the scenario's erasure must reach it.
  const webhookLines: string[] = [];
  let webhook: { url: string; stop: () => Promise<void> } | undefined;

  beforeAll(async () => {
    await clearFirestore();
    await clearAuth();
    webhook = await startDemoWebhook({ root: join(import.meta.dirname, "..", "..", ".."), processor: example.demoWebhook.processor, secret: example.demoWebhook.secret, port: 0, log: (line) => webhookLines.push(line) });
    process.env.RETENTION_PROCESSOR_ENDPOINTS = `${example.demoWebhook.processor}=${webhook.url}`;
  });

  afterAll(async () => {
    delete process.env.RETENTION_PROCESSOR_ENDPOINTS;
    await webhook?.stop();
  });

  it("seeds every fixed id with retention fields, and a second run leaves the same data", async () => {
    const first = await seedDemo({ nowMs: Date.parse("2026-11-30T00:00:00Z") });
    expect(first.documents).toBe(DEMO_DOCS.length);
    const afterFirst = await snapshotAll();
    for (const d of DEMO_DOCS) {
      const data = afterFirst[d.path] as Record<string, unknown> | undefined;
      expect(data, d.path).toBeDefined();
      expect(data).toMatchObject({ lifecycleState: "ACTIVE", tenantId: d.tenantId, policyVersion: policy().version });
      expect(typeof data?.retentionClass).toBe("string");
    }
    expect((afterFirst["sessions/s-1001"] as { expireAt?: unknown }).expireAt).toBeDefined();
    // Children carry their parent's expiry (the nested-data rule).
    expect((afterFirst["sessions/s-1001/tokens/tk-1001"] as { expireAt: unknown }).expireAt).toEqual(
      (afterFirst["sessions/s-1001"] as { expireAt: unknown }).expireAt,
    );
    // A later clock must not move anything: anchors are kept from the first seed.
    await seedDemo({ nowMs: Date.parse("2026-12-05T00:00:00Z") });
    expect(await snapshotAll()).toEqual(afterFirst);
  });

  it("creates one Auth user per demo role with its claims", async () => {
    for (const u of DEMO_USERS) {
      const record = await getAuth(adminApp()).getUser(u.uid);
      expect(record.customClaims).toEqual(u.claims);
    }
  });

  it("--scenario: the requests an officer meets, in each state, and a purge run the brake holds back; a second run changes nothing", async () => {
    const nowMs = Date.now();
    await seedDemo({ nowMs });
    const first = await seedDemoScenario({ nowMs });
    expect(first.brakeRunsWaiting).toBe(1);
    const officer = { uid: "c-2001", tenantId: null, roles: ["compliance" as const] };
    const listed = async () => (await listDeletionRequestsHandler({ pageSize: 100 }, officer)).items;
    const items = await listed();
    const of = (subject: string) => items.filter((r) => (r.subject.type === "user" ? r.subject.uid : r.subject.tenantId) === subject);
    const [askedToday, graceOver, underHold, erased] = SCENARIO_SUBJECTS.map((s) => of(s.uid));
    expect(askedToday!.map((r) => r.state)).toEqual(["PENDING"]);
    expect(Date.parse(askedToday![0]!.graceEndsAt!)).toBeGreaterThan(nowMs);
    expect(graceOver!.map((r) => r.state)).toEqual(["PENDING"]);
    expect(Date.parse(graceOver![0]!.graceEndsAt!)).toBeLessThan(nowMs);
    expect(graceOver![0]!.overdue).toBe(false);
    expect(underHold!.map((r) => r.state)).toEqual(["RETAINED_UNDER_HOLD"]);
    expect(erased!.map((r) => r.state)).toEqual(["PURGED"]);
    // Each runs on the law the published registry assigns (Grace's directory entry says California), and the open
    // ones show the days left the console sorts by; answered ones have none.
    expect([askedToday, graceOver, underHold, erased].map((r) => r![0]!.law)).toEqual(["ccpa", "gdpr", "gdpr", "gdpr"]);
    expect(askedToday![0]!.daysLeft).toBe(44);
    expect(graceOver![0]!.daysLeft).toBeGreaterThanOrEqual(17);
    expect(graceOver![0]!.daysLeft).toBeLessThanOrEqual(20);
    expect(erased![0]!.daysLeft).toBeNull();
    // A closure awaiting approval has no due date yet: it is listed under its state.
    const page = await listDeletionRequestsHandler({ state: "AWAITING_APPROVAL", pageSize: 100 }, officer);
    const closure = page.items.filter((r) => r.subject.tenantId === SCENARIO_CLOSED_TENANT);
    expect(closure.map((r) => r.state)).toEqual(["AWAITING_APPROVAL"]);
    // It was opened by a retention-admin, who is named.
    expect(page.people[closure[0]!.requestedBy]).toEqual({ name: "Rita (retention-admin)", email: "rita.admin@atlasmart.test" });
    const brake = await listBrakeRunsHandler({ state: "WAITING" }, officer);
    expect(brake.items.map((r) => r.collection)).toEqual(["events"]);
    // The erasure reached the demo's webhook processor, signed with its key, and its signed receipt is recorded: the
    // request shows it acknowledged (the topic waits for the relay the emulators never fire; staff confirm the manual one).
    expect(webhookLines).toEqual([expect.stringMatching(/^\[demo-webhook\] search-index received the erasure of user u-1104 \(entries profile, directory; idempotency key erase-[0-9a-f]+\); signature valid; answered receipt demo-search-index-1$/)]);
    const status = await getDeletionStatusHandler({ requestId: erased![0]!.requestId }, officer, { nowMs, refreshMs: DAY_MS });
    expect(Object.fromEntries((status.processors ?? []).map((p) => [p.processor, [p.status, p.receiptId]]))).toEqual({
      "search-index": ["acknowledged", "demo-search-index-1"],
      "email-platform": ["pending", null],
      "payment-provider": ["sent", null],
    });
    expect(status.timeline.map((t) => t.event)).toEqual(expect.arrayContaining(["PROCESSOR_NOTICE_SENT", "PROCESSOR_ACKNOWLEDGED"]));
    expect((await verifyEvidence({ maxFindings: 5 })).findings).toEqual([]);
    // Idempotent: the same requests, states and waiting run after a second seed.
    const again = await seedDemoScenario({ nowMs: nowMs + 60_000 });
    expect(again).toEqual(first);
    expect((await listed()).map((r) => [r.requestId, r.state])).toEqual(items.map((r) => [r.requestId, r.state]));
    expect((await listBrakeRunsHandler({ state: "WAITING" }, officer)).items.map((r) => r.runKey)).toEqual(brake.items.map((r) => r.runKey));
    expect(webhookLines).toHaveLength(1);
  }, 120_000);
});
