import type { Actor } from "../../functions/src/evidence/rules";
import { placeHold } from "../../functions/src/holds/index";
import { DAY_MS } from "../../functions/src/kernel/policy";
import { db } from "../../functions/src/platform/firestore";
import { writeGoverned } from "../../functions/src/platform/governed-repo";
import { listBrakeRuns, runNightlyPurge } from "../../functions/src/purge/index";
import { findRequest, openDeletionRequest, resolveTenantSubject } from "../../functions/src/requests/index";
import { deliverNotice, noticesOfRequest } from "../../functions/src/processors/index";
import { DEMO_TENANT } from "./data";

/**
 * The demo's deletion requests, one in each state a compliance officer meets, and one purge run the brake holds
 * back, so that a fresh `npm start` has something in Requests and in Approvals. Each is made by the product's own
 * code, on the product's own clock moved back where a state needs time to have passed:
 * - Grace Hopper (u-1101) asked today: PENDING, in her grace period; her directory entry says California, so her
 *   request runs on the CCPA's 45 days (the registry's legal clocks), the others' on GDPR's month;
 * - Alan Turing (u-1102) asked ten days ago: PENDING, grace over, not yet run (the next nightly run takes it);
 * - Hedy Lamarr (u-1103) asked ten days ago, her profile under a LITIGATION hold, and a run two days ago erased the
 *   rest: RETAINED_UNDER_HOLD;
 * - Katherine Johnson (u-1104) asked ten days ago and the same run erased her: PURGED;
 * - Initech's closure (t-initech), asked by a retention-admin today: AWAITING_APPROVAL by a second staff member;
 * - sixty page-view events a hundred days old: today's sweep of them is more than half of their class, so the
 *   mass-deletion brake holds it back for a retention-admin (Approvals).
 * Idempotent: a step whose outcome exists (the subject's request, a brake run waiting) is not done again, and its
 * documents are not rewritten.
 */
export interface ScenarioResult {
  requests: number;
  brakeRunsWaiting: number;
}

interface DemoSubject {
  uid: string;
  name: string;
  /** What the directory entry says of where they live: the registry's legal clocks read it (US-CA: the CCPA). */
  region?: string;
}

const ASKED_TODAY: DemoSubject = { uid: "u-1101", name: "Grace Hopper", region: "US-CA" };
const GRACE_OVER: DemoSubject = { uid: "u-1102", name: "Alan Turing" };
const UNDER_HOLD: DemoSubject = { uid: "u-1103", name: "Hedy Lamarr" };
const ERASED: DemoSubject = { uid: "u-1104", name: "Katherine Johnson" };
export const SCENARIO_SUBJECTS: readonly DemoSubject[] = [ASKED_TODAY, GRACE_OVER, UNDER_HOLD, ERASED];
export const SCENARIO_CLOSED_TENANT = "t-initech";
/** The old events whose sweep trips the brake (more than half of their class, with at least 50 in it). */
export const SCENARIO_OLD_EVENTS = 60;

const CLARA: Actor = { type: "staff", id: "c-2001" };
const RITA: Actor = { type: "staff", id: "r-3001" };

async function hasRequest(uid: string): Promise<boolean> {
  return findRequest({ latestOf: uid }).then(
    () => true,
    (err: unknown) => {
      if ((err as { reason?: string }).reason === "REQUEST_NOT_FOUND") return false;
      throw err;
    },
  );
}

/** A customer's data across the collections the data map erases: a profile, a directory entry, an activity. */
async function writeCustomer(s: DemoSubject, atMs: number): Promise<void> {
  await writeGoverned(`tenants/${DEMO_TENANT}/users/${s.uid}`, { uid: s.uid, displayName: s.name }, DEMO_TENANT, atMs);
  await writeGoverned(`userDirectory/${s.uid}`, { uid: s.uid, ...(s.region ? { region: s.region } : {}) }, DEMO_TENANT, atMs);
  await writeGoverned(`activity/a-${s.uid}`, { subjectUid: s.uid, type: "SIGNED_IN" }, DEMO_TENANT, atMs);
}

async function askForErasure(s: DemoSubject, atMs: number): Promise<string> {
  const { request } = await openDeletionRequest({ subject: { type: "user", uid: s.uid, tenantId: DEMO_TENANT }, source: "user", actor: { type: "user", id: s.uid }, nowMs: atMs });
  return request.requestId;
}

/**
 * `npm start` points a webhook processor at a local stand-in (RETENTION_PROCESSOR_ENDPOINTS, scripts/demo-webhook.mjs):
 * the erasure's notice to it is delivered here, by the delivery task's own body, as the queue would deliver it.
 * Nothing is sent anywhere else: the other processors' notices wait, as they would for their vendors.
 */
async function deliverToLocalWebhooks(requestIds: readonly string[], atMs: number): Promise<void> {
  const local = new Set((process.env.RETENTION_PROCESSOR_ENDPOINTS ?? "").split(",").map((p) => p.split("=")[0]!.trim()).filter((n) => n !== ""));
  if (local.size === 0) return;
  for (const requestId of requestIds) {
    for (const n of await noticesOfRequest(requestId)) {
      if (n.kind === "webhook" && local.has(n.processor)) await deliverNotice(n.noticeId, { nowMs: () => atMs, finalAttempt: false });
    }
  }
}

export async function seedDemoScenario(opts: { nowMs: number }): Promise<ScenarioResult> {
  const now = opts.nowMs;
  // Ten days ago: past a user's seven-day grace, well inside the month GDPR gives an erasure.
  const asked = now - 10 * DAY_MS;
  const ranAt = now - 2 * DAY_MS;
  const toRun: string[] = [];
  for (const s of [GRACE_OVER, UNDER_HOLD, ERASED]) {
    if (await hasRequest(s.uid)) continue;
    await writeCustomer(s, asked - DAY_MS);
    if (s === UNDER_HOLD) {
      await placeHold({ targetPath: `tenants/${DEMO_TENANT}/users/${s.uid}`, reasonCode: "LITIGATION", releaseAfterMs: null, note: "demo: dispute 2026-31", actor: CLARA, nowMs: asked - DAY_MS });
    }
    const requestId = await askForErasure(s, asked);
    if (s !== GRACE_OVER) toRun.push(requestId);
  }
  if (toRun.length > 0) {
    await runNightlyPurge({ nowMs: ranAt, asOfMs: ranAt, dryRun: false, actor: { type: "system", id: "nightlyPurge" }, correlationId: "demo-seed-run", requestIds: toRun, sweep: false, leaseMs: 60_000 });
    await deliverToLocalWebhooks(toRun, ranAt);
  }
  if (!(await hasRequest(ASKED_TODAY.uid))) {
    await writeCustomer(ASKED_TODAY, now - 30 * DAY_MS);
    await askForErasure(ASKED_TODAY, now);
  }
  // A tenant's closure, asked by a retention-admin; openDeletionRequest returns the open one if it is there.
  if (!(await db().doc(`tenants/${SCENARIO_CLOSED_TENANT}`).get()).exists) {
    await writeGoverned(`tenants/${SCENARIO_CLOSED_TENANT}`, { name: "Initech" }, SCENARIO_CLOSED_TENANT, now - 400 * DAY_MS);
    await writeGoverned(`tenants/${SCENARIO_CLOSED_TENANT}/users/u-3101`, { uid: "u-3101", displayName: "Peter Gibbons" }, SCENARIO_CLOSED_TENANT, now - 400 * DAY_MS);
  }
  await openDeletionRequest({ subject: await resolveTenantSubject(SCENARIO_CLOSED_TENANT), source: "staff", reason: "Contract ended (demo)", actor: RITA, nowMs: now });
  // The brake: today's sweep of sixty expired events is held back until a retention-admin decides.
  let waiting = (await listBrakeRuns({ state: "WAITING" })).items.length;
  if (waiting === 0 && !(await db().doc("events/old-00").get()).exists) {
    for (let i = 0; i < SCENARIO_OLD_EVENTS; i++) await writeGoverned(`events/old-${String(i).padStart(2, "0")}`, { type: "PAGE_VIEW" }, DEMO_TENANT, now - 100 * DAY_MS);
    await runNightlyPurge({ nowMs: now, asOfMs: now, dryRun: false, actor: { type: "system", id: "nightlyPurge" }, correlationId: "demo-seed-sweep", requests: false, leaseMs: 60_000 });
    waiting = (await listBrakeRuns({ state: "WAITING" })).items.length;
  }
  return { requests: SCENARIO_SUBJECTS.length + 1, brakeRunsWaiting: waiting };
}
