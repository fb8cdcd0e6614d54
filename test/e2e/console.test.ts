/**
 * The compliance console, end to end in Debian's Chromium (playwright-core) on the emulators, served by the
 * Hosting emulator with the deployed Content-Security-Policy: a customer asks for deletion through the typed
 * client; an officer sees the request and its plan; officer 1 places a FINANCE_RETENTION hold and cannot
 * release it; officer 2 finds it and releases it; a retention-admin approves a tripped purge run; the evidence
 * view explains a purged path and exports it; the dashboard draws the report's charts; a customer is refused.
 * Every view is checked with axe-core (no serious or critical violation) and photographed into
 * artifacts/console/. Any script error on a page fails the test.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import AxeBuilder from "@axe-core/playwright";
import { createRetentionClient, refusalReason, type RetentionClient } from "@atlasmart/retention-client";
import { deleteApp, initializeApp, type FirebaseApp } from "firebase/app";
import { connectAuthEmulator, getAuth, signInWithEmailAndPassword } from "firebase/auth";
import { connectFunctionsEmulator, getFunctions } from "firebase/functions";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEMO_PASSWORD } from "../../examples/atlasmart/data";
import { DAY_MS } from "../../functions/src/kernel/policy";
import { writeGoverned } from "../../functions/src/platform/governed-repo";
import { openDeletionRequest } from "../../functions/src/requests/index";
import { seedDemoScenario } from "../../examples/atlasmart/scenario";
import { seedDemo } from "../../examples/atlasmart/seed";
import { clearAuth, clearFirestore, db, PROJECT_ID } from "../helpers/emulator";
import { repoRoot } from "../helpers/policy";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const ORIGIN = process.env.CONSOLE_ORIGIN!;
const SHOTS = join(repoRoot, "artifacts", "console");
const EVENTS = 60;

interface AxeSummary {
  view: string;
  violations: { id: string; impact: string | null; nodes: number }[];
}
const axeResults: AxeSummary[] = [];
const apps: FirebaseApp[] = [];

/** The typed client as an app would use it: the Firebase JS SDK signed in on the Auth emulator. */
async function clientFor(email: string): Promise<RetentionClient> {
  const app = initializeApp({ projectId: PROJECT_ID, apiKey: "fake-api-key" }, `e2e-${email}-${apps.length}`);
  apps.push(app);
  const auth = getAuth(app);
  connectAuthEmulator(auth, `http://${process.env.FIREBASE_AUTH_EMULATOR_HOST}`, { disableWarnings: true });
  await signInWithEmailAndPassword(auth, email, DEMO_PASSWORD);
  const functions = getFunctions(app, "us-central1");
  const fn = new URL(process.env.FUNCTIONS_EMULATOR_ORIGIN!);
  connectFunctionsEmulator(functions, fn.hostname, Number(fn.port));
  return createRetentionClient(functions, { timeoutMs: 300_000 });
}

/** axe-core on the page as it is: no serious or critical violation; every result is kept for the report. */
async function checkA11y(page: Page, view: string): Promise<void> {
  const r = await new AxeBuilder({ page }).analyze();
  axeResults.push({ view, violations: r.violations.map((v) => ({ id: v.id, impact: v.impact ?? null, nodes: v.nodes.length })) });
  const bad = r.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect(bad.map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(" ")).join("; ")}`), `axe on ${view}`).toEqual([]);
}

/** The keys of the answers the console has cached (its emulator-only hook): never their data. */
async function cachedKeys(page: Page): Promise<unknown[][]> {
  return page.evaluate(() => (window as unknown as { __cachedQueryKeys: () => unknown[][] }).__cachedQueryKeys());
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

describe("the compliance console in a browser", () => {
  let browser: Browser;
  const pageErrors: string[] = [];
  const contexts: BrowserContext[] = [];
  /** The callables the test makes refuse on purpose (their HTTP error is logged by the browser). */
  const provokedRefusals: string[] = [];

  /** Signs in on the page's sign-in form, in whatever tab it is. */
  async function signInHere(page: Page, email: string): Promise<void> {
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill(DEMO_PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByTestId("signed-in-as").getByText(email).waitFor();
  }

  async function signIn(email: string): Promise<Page> {
    const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 900 } });
    contexts.push(context);
    const page = await context.newPage();
    page.on("pageerror", (e) => pageErrors.push(`${email}: ${e.message}`));
    page.on("console", (m) => {
      // A refusal the test provokes on purpose is an HTTP error the browser logs; any other error fails the test.
      const provoked = m.text().startsWith("Failed to load resource") && provokedRefusals.some((api) => m.location().url.endsWith(`/api/${api}`));
      if (m.type() === "error" && !provoked) pageErrors.push(`${email} console: ${m.text()}`);
    });
    await page.goto(`${ORIGIN}/`);
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill(DEMO_PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByTestId("signed-in-as").waitFor();
    return page;
  }

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`Chromium is not at ${CHROMIUM}: apt-get install -y chromium (CI's .ci/run installs it).`);
    mkdirSync(SHOTS, { recursive: true });
    await clearFirestore();
    await clearAuth();
    await seedDemo({ nowMs: Date.now(), withAuth: true });
    // What `npm start` seeds: requests in each state an officer meets, and a purge run the brake holds back.
    await seedDemoScenario({ nowMs: Date.now() });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  }, 120_000);

  afterAll(async () => {
    // Each tab as it was left: after a failure, what the person saw when the test stopped.
    let n = 0;
    for (const c of contexts) for (const p of c.pages()) await p.screenshot({ path: join(SHOTS, `last-${n++}.png`), fullPage: true }).catch(() => undefined);
    for (const c of contexts) await c.close();
    await browser?.close();
    await Promise.all(apps.map((a) => deleteApp(a)));
    writeFileSync(join(SHOTS, "axe.json"), JSON.stringify(axeResults, null, 2));
  });

  it("walks through every view as the people who use it", async () => {
    // The sign-in page, before anyone signs in.
    {
      const context = await browser.newContext();
      contexts.push(context);
      const page = await context.newPage();
      page.on("pageerror", (e) => pageErrors.push(`anonymous: ${e.message}`));
      await page.goto(`${ORIGIN}/requests`);
      await page.getByRole("heading", { name: "Sign in" }).waitFor();
      await page.getByText("clara.compliance@atlasmart.test").waitFor();
      await checkA11y(page, "sign-in");
      await shot(page, "01-sign-in");
    }

    // 1. A customer asks for deletion from the demo app, through the typed client.
    const ada = await clientFor("ada@atlasmart.test");
    const { requestId } = await ada.requestAccountDeletion({ reason: "leaving" });
    expect((await ada.getDeletionStatus({})).requestId).toBe(requestId);

    // 2. An officer sees the request and its plan, in words.
    const tab = await signIn("clara.compliance@atlasmart.test");
    await tab.getByRole("heading", { name: "Deletion requests" }).waitFor();
    const row = tab.getByTestId("requests-row").filter({ hasText: requestId });
    await row.waitFor();
    expect(await row.textContent()).toContain("PENDING");
    expect(await row.textContent()).toMatch(/due in/);
    expect(await row.textContent()).toContain("u-1001 (tenant t-acme)");
    expect(await row.textContent()).toMatch(/Waiting out its grace period until \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC/);
    expect(await row.textContent()).toContain("the person themselves");
    // The demo's requests, one in each state an officer meets, each saying where it stands.
    const table = (await tab.getByTestId("requests").textContent())!;
    for (const state of ["AWAITING_APPROVAL", "RETAINED_UNDER_HOLD", "PURGED"]) expect(table).toContain(state);
    expect(table).toContain("Grace period over: the next nightly run erases it");
    expect(table).toContain("Waiting for a second staff member to approve the closure");
    expect(await tab.getByTestId("requests-row").filter({ hasText: "tenant t-initech" }).textContent()).toContain("Rita (retention-admin) (staff)");
    await checkA11y(tab, "requests");
    await shot(tab, "02-requests");
    await row.getByRole("link", { name: requestId }).click();
    await tab.getByTestId("timeline").getByText("Requested").waitFor();
    expect(await tab.getByTestId("timeline").textContent()).toContain("asked for by the person themselves");
    expect(await tab.getByTestId("timeline").textContent()).not.toContain("source user");
    expect(await tab.getByTestId("opened-by").textContent()).toBe("the person themselves, in the app");
    expect(await tab.getByTestId("where-it-stands").textContent()).toMatch(/^Waiting out its grace period until /);
    // Nothing is erased yet: no "fully gone by" date, no ERASURE_COMPLETE.
    expect(await tab.getByTestId("fully-gone-by").textContent()).toBe("not yet: the erasure has not finished");
    expect(await tab.getByTestId("erasure-complete").textContent()).toBe("not yet");
    const plan = tab.getByTestId("plan");
    await plan.waitFor();
    expect(await plan.getByRole("row").filter({ hasText: "orders" }).textContent()).toContain("FINANCE_RETENTION");
    await checkA11y(tab, "request-detail");
    await shot(tab, "03-request-detail");

    // 3. Officer 1 places a FINANCE_RETENTION hold; the path is checked before anything is sent, in words.
    await tab.getByRole("link", { name: "Holds" }).click();
    await tab.getByRole("heading", { name: "Retention holds" }).waitFor();
    const target = tab.getByLabel("Document or tenant path");
    const pathCheck = tab.getByTestId("path-check");
    await target.fill("tenants/t-acme/pets/p-1");
    await pathCheck.getByText("No retention policy covers “pets”").waitFor();
    expect(await pathCheck.textContent()).toContain("Code: NOT_GOVERNED_PATH");
    await target.fill("tenants/t-acme/orders");
    await pathCheck.getByText("“orders” is a collection, not a document").waitFor();
    // A refusal only the server can give (no such document) reads in words, and goes once the field changes.
    provokedRefusals.push("placeRetentionHold");
    await target.fill("tenants/t-acme/orders/o-9999");
    await tab.getByLabel("Reason for the hold").selectOption("FINANCE_RETENTION");
    await tab.getByRole("button", { name: "Place hold" }).click();
    const refusal = tab.getByTestId("problem");
    await refusal.getByText("There is no document at this path.").waitFor();
    expect(await refusal.textContent()).toContain("Code: TARGET_NOT_FOUND");
    await target.fill("tenants/t-acme/orders/o-1002");
    await refusal.waitFor({ state: "detached" });
    provokedRefusals.pop();
    await pathCheck.getByText("class finance-7y").waitFor();
    // The release-after date is UTC, and says so with the time where the officer is.
    await tab.getByLabel(/^Release after/).fill("03/31/2027");
    await tab.getByTestId("release-after-hint").getByText("YYYY-MM-DD HH:MM").waitFor();
    await tab.getByLabel(/^Release after/).fill("2027-03-31 17:00");
    await tab.getByTestId("release-after-hint").getByText("No one can release it before 2027-03-31 17:00 UTC, which is").waitFor();
    await tab.getByLabel(/^Release after/).fill("");
    await tab.getByLabel(/^Note/).fill("tax year 2026");
    await tab.getByRole("button", { name: "Place hold" }).click();
    const placed = await tab.getByTestId("hold-placed").textContent();
    const holdId = placed!.replace("Hold placed: ", "").trim();
    expect(holdId).toMatch(/^[A-Za-z0-9]{20}$/);
    // 4. Officer 1 cannot release it: the console says why, and the server refuses too. The placer is named.
    const mine = tab.getByTestId("holds-row").filter({ hasText: holdId });
    await mine.getByText("Awaiting a second officer").waitFor();
    expect(await mine.getByRole("button", { name: /Release/ }).count()).toBe(0);
    expect(await mine.textContent()).toContain("Clara (compliance)");
    expect(await mine.textContent()).not.toContain("c-2001");
    // Paths wrap at their slashes only: no segment of a target path is split over two lines.
    const segments = await tab.getByTestId("holds").evaluate((table) => Array.from(table.querySelectorAll("code.path .seg"), (seg) => seg.getClientRects().length));
    expect(segments.length).toBeGreaterThan(0);
    expect(segments.every((lines) => lines === 1)).toBe(true);
    const claraClient = await clientFor("clara.compliance@atlasmart.test");
    await expect(claraClient.releaseRetentionHold({ holdId, reason: "mine" })).rejects.toSatisfy((e: unknown) => refusalReason(e) === "TWO_PERSON_RULE");
    await checkA11y(tab, "holds");
    await shot(tab, "04-holds-awaiting-second-officer");

    // 5. Officer 1 signs out and officer 2 signs in, in the same tab: officer 2 never sees officer 1's answers
    //    (her hold list said "Awaiting a second officer" and had no Release button), not even for a moment.
    await tab.getByRole("button", { name: "Sign out" }).first().click();
    await tab.getByRole("heading", { name: "Sign in" }).waitFor();
    expect(await cachedKeys(tab)).toEqual([]);
    await tab.evaluate(() => {
      const w = window as unknown as { sawAwaiting: boolean };
      w.sawAwaiting = false;
      new MutationObserver(() => {
        if (document.body.textContent?.includes("Awaiting a second officer")) w.sawAwaiting = true;
      }).observe(document.body, { subtree: true, childList: true, characterData: true });
    });
    await signInHere(tab, "dev.compliance@atlasmart.test");
    await tab.getByRole("link", { name: "Holds" }).click();
    await tab.getByRole("heading", { name: "Retention holds" }).waitFor();
    // 6. Officer 2 finds it by its reason (the filter applies at once) and releases it.
    await tab.getByLabel("Reason", { exact: true }).selectOption("FINANCE_RETENTION");
    const theirs = tab.getByTestId("holds-row").filter({ hasText: holdId });
    await theirs.getByRole("button", { name: `Release hold ${holdId}` }).waitFor();
    expect(await tab.evaluate(() => (window as unknown as { sawAwaiting: boolean }).sawAwaiting)).toBe(false);
    expect((await cachedKeys(tab)).every((k) => k[0] === "c-2002")).toBe(true);
    await theirs.getByRole("button", { name: `Release hold ${holdId}` }).click();
    // The reason box has the focus, and the form can be cancelled.
    await expect.poll(() => theirs.getByLabel("Why release it?").evaluate((el) => el === document.activeElement), { timeout: 5_000 }).toBe(true);
    await theirs.getByRole("button", { name: "Cancel" }).click();
    await theirs.getByRole("button", { name: `Release hold ${holdId}` }).click();
    await theirs.getByLabel("Why release it?").fill("tax year closed");
    await theirs.getByRole("button", { name: "Confirm release" }).click();
    await tab.getByTestId("hold-released").getByText(`Hold ${holdId} on tenants/t-acme/orders/o-1002 is released.`).waitFor();
    await tab.getByTestId("holds-empty").waitFor();
    await tab.getByLabel("Show", { exact: true }).selectOption("RELEASED");
    const history = tab.getByTestId("holds-row").filter({ hasText: holdId }).getByTestId("released");
    await history.getByText("by Dev (compliance)").waitFor();
    expect(await history.textContent()).toContain("“tax year closed”");
    await checkA11y(tab, "holds-history");
    await shot(tab, "05-holds-history");
    expect((await db().doc(`retentionHolds/${holdId}`).get()).get("state")).toBe("RELEASED");

    // 7. A retention-admin approves a tripped run: a hundred days on, a mass deletion of events trips the brake.
    const now = Date.now();
    for (let i = 0; i < EVENTS; i++) await writeGoverned(`events/bulk-${String(i).padStart(2, "0")}`, { type: "X" }, "t-acme", now);
    const asOf = new Date(now + 100 * DAY_MS).toISOString();
    const ritaClient = await clientFor("rita.admin@atlasmart.test");
    const first = await ritaClient.runRetentionJob({ job: "nightlyPurge", asOf });
    const waiting = (first.brake as { waiting: { runKey: string; unitKey: string }[] }).waiting.find((w) => w.unitKey === "sweep-events")!;
    expect(waiting).toBeDefined();
    const rita = await signIn("rita.admin@atlasmart.test");
    await rita.getByRole("heading", { name: "Purge approvals" }).waitFor();
    // The demo's own braked sweep waits beside this one.
    await rita.getByTestId("brake-run").nth(1).waitFor();
    const card = rita.getByTestId("brake-run").filter({ hasText: waiting.runKey });
    await card.getByText("WAITING").first().waitFor();
    expect(await card.getByTestId("would-delete").textContent()).toMatch(/^\d+ documents$/);
    expect(await card.getByRole("row").filter({ hasText: "event-90d" }).count()).toBe(1);
    await checkA11y(rita, "approvals");
    await shot(rita, "06-approvals-waiting");
    await card.getByLabel(/^Decision note/).fill("expired telemetry, checked");
    await card.getByRole("button", { name: "Approve this deletion set" }).click();
    await card.getByTestId("decision").getByText("APPROVED").waitFor();
    await shot(rita, "07-approvals-approved");
    await ritaClient.runRetentionJob({ job: "nightlyPurge", asOf });
    expect((await db().doc("events/bulk-00").get()).exists).toBe(false);

    // 8. The evidence view explains a purged path: what, who, why, who allowed it, in one time format and with
    //    people's names; and exports it.
    const officer = tab;
    await officer.getByRole("link", { name: "Evidence" }).click();
    await officer.getByLabel("Path or id").fill("events/bulk-00");
    await officer.getByRole("button", { name: "Explain" }).click();
    await officer.getByTestId("chain-status").getByText("Evidence verifies").waitFor();
    const evidence = officer.getByTestId("evidence");
    await evidence.getByRole("row").filter({ hasText: "PURGE_BATCH" }).first().waitFor();
    expect(await evidence.getByRole("row").filter({ hasText: "PURGE_BRAKE_APPROVED" }).count()).toBeGreaterThan(0);
    expect(await evidence.getByRole("row").filter({ hasText: "PURGE_BRAKE_DECIDED" }).filter({ hasText: "Rita (retention-admin) (staff)" }).count()).toBe(1);
    const summary = (await officer.getByTestId("summary").textContent())!;
    expect(summary).toContain("PURGE_BATCH by the system (nightlyPurge)");
    expect(summary).toContain("allowed by: ");
    expect(summary).toMatch(/PURGE_BRAKE_APPROVED by the system \(nightlyPurge\): RETENTION_ADMIN_APPROVED, policy v\d+, approved by Rita \(retention-admin\)/);
    expect(summary).toMatch(/\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC/);
    expect(summary).not.toMatch(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/);
    expect(await officer.getByTestId("entries-legend").textContent()).toContain("is entry 2 of chain s0406");
    await checkA11y(officer, "evidence");
    await shot(officer, "08-evidence");
    const [csv] = await Promise.all([officer.waitForEvent("download"), officer.getByRole("button", { name: "Export CSV" }).click()]);
    const csvText = readFileSync(await csv.path(), "utf8");
    expect(csvText.split("\r\n")[0]).toBe("id,chain,seq,at,action,actorType,actorId,reason,policyVersion,requestId,holdId,correlationId,manifestHash,role,verified,hash,paths");
    expect(csvText).toContain("PURGE_BATCH");
    const [json] = await Promise.all([officer.waitForEvent("download"), officer.getByRole("button", { name: "Export JSON" }).click()]);
    const exported = JSON.parse(readFileSync(await json.path(), "utf8")) as { query: { kind: string; value: string }; entries: { action: string }[] };
    expect(exported.query).toEqual({ kind: "path", value: "events/bulk-00" });
    expect(exported.entries.map((e) => e.action)).toContain("PURGE_BATCH");

    // The released hold's evidence shows the reason the second officer typed, checked against the ledger's hash.
    await officer.getByLabel("Path or id").fill("tenants/t-acme/orders/o-1002");
    await officer.getByRole("button", { name: "Explain" }).click();
    const releasedRow = officer.getByTestId("evidence").getByRole("row").filter({ hasText: "HOLD_RELEASED" });
    await releasedRow.getByTestId("release-reason").getByText("Released because: “tax year closed”").waitFor();
    expect(await releasedRow.textContent()).not.toContain("does not match");
    // A question that is not a document's path says so in words.
    await officer.getByLabel("Path or id").fill("tenants/t-acme/orders");
    await officer.getByRole("button", { name: "Explain" }).click();
    await officer.getByText("“orders” is a collection, so add the document's id after it").waitFor();

    // 9. The dashboard draws the report's charts from live data.
    await officer.getByRole("link", { name: "Dashboard" }).click();
    await officer.getByTestId("chart-candidates").locator("svg").waitFor({ timeout: 120_000 });
    expect(Number(await officer.getByTestId("tile-documents").textContent())).toBeGreaterThan(0);
    expect(await officer.getByTestId("dashboard-chain").textContent()).toBe("Evidence ledger verifies");
    await checkA11y(officer, "dashboard");
    await shot(officer, "09-dashboard");

    // 10. The officer signs out and a customer signs in, in the same tab: no answer of the officer's is left in
    //     the page, the customer is refused with a clear page, and not one call for data is made. (Ada's account
    //     went with her purge.)
    const apiCalls: string[] = [];
    const customer = tab;
    expect((await cachedKeys(customer)).length).toBeGreaterThan(0);
    await customer.getByRole("button", { name: "Sign out" }).first().click();
    await customer.getByRole("heading", { name: "Sign in" }).waitFor();
    customer.on("request", (r) => {
      if (r.url().includes("/api/")) apiCalls.push(r.url());
    });
    await signInHere(customer, "ben@atlasmart.test");
    await customer.getByTestId("not-authorised").waitFor();
    expect(await cachedKeys(customer)).toEqual([]);
    await customer.getByRole("heading", { name: "Not authorised" }).waitFor();
    await customer.goto(`${ORIGIN}/holds`);
    await customer.getByTestId("not-authorised").waitFor();
    expect(await cachedKeys(customer)).toEqual([]);
    expect(apiCalls).toEqual([]);
    await checkA11y(customer, "not-authorised");
    await shot(customer, "10-not-authorised");

    expect(pageErrors).toEqual([]);
  }, 600_000);

  it("shows an erasure's processors, and a compliance officer confirms the manual one with the vendor's ticket", async () => {
    // Katherine Johnson (u-1104) was erased by the scenario's run: her erasure notified AtlasMart's three processors.
    const officer = await signIn("dev.compliance@atlasmart.test");
    await officer.getByRole("heading", { name: "Deletion requests" }).waitFor();
    const row = officer.getByTestId("requests-row").filter({ hasText: "u-1104" });
    await row.waitFor();
    await row.getByRole("link").first().click();
    const processors = officer.getByTestId("processors");
    await processors.waitFor();
    // An answered request's deadline has stopped: nothing offers to extend it.
    expect(await officer.getByTestId("legal-clock").textContent()).not.toContain("Extendable");
    expect(await officer.getByTestId("legal-clock").getByRole("button").count()).toBe(0);
    expect(await officer.getByTestId("processor-search-index").textContent()).toContain("not sent yet");
    expect(await officer.getByTestId("processor-email-platform").textContent()).toContain("pubsub");
    const desk = officer.getByTestId("processor-payment-provider");
    expect(await desk.textContent()).toContain("sent, awaiting its confirmation");
    expect(await desk.textContent()).toContain("by staff");
    await checkA11y(officer, "request-processors");
    await shot(officer, "11-request-processors");
    // The button waits for a ticket; with one, the confirmation is recorded and the row says so.
    const confirm = desk.getByRole("button", { name: "Confirm payment-provider erased it" });
    expect(await confirm.isDisabled()).toBe(true);
    await desk.getByLabel("Vendor's ticket or receipt").fill("PSP-CASE-4411");
    await confirm.click();
    await desk.getByText("receipt PSP-CASE-4411").waitFor();
    expect(await desk.textContent()).toContain("confirmed");
    await officer.getByTestId("timeline").getByText(/payment-provider: receipt PSP-CASE-4411 \(staff\)/).waitFor();
    // Recorded once, as evidence naming the officer.
    const acks = (await db().collection("deletionAudits").where("action", "==", "PROCESSOR_ACKNOWLEDGED").get()).docs.map((d) => d.data() as { detail: Record<string, unknown>; actor: { type: string } });
    expect(acks.map((e) => [e.detail.processor, e.detail.receiptId, e.actor.type])).toEqual([["payment-provider", "PSP-CASE-4411", "staff"]]);
    await shot(officer, "12-processor-confirmed");
    expect(pageErrors).toEqual([]);
  }, 300_000);

  it("a compliance officer extends an open request's legal deadline once, with the reason the law asks for", async () => {
    // A customer in California asks today (the scenario's own requests were answered by the walk-through's purge): her
    // request runs on CCPA's clock, extendable once by 45 days.
    const now = Date.now();
    await writeGoverned("tenants/t-acme/users/u-1201", { uid: "u-1201", displayName: "Mary Jackson" }, "t-acme", now);
    await writeGoverned("userDirectory/u-1201", { uid: "u-1201", region: "US-CA" }, "t-acme", now);
    const { request } = await openDeletionRequest({ subject: { type: "user", uid: "u-1201", tenantId: "t-acme" }, source: "user", actor: { type: "user", id: "u-1201" }, nowMs: now });
    const officer = await signIn("clara.compliance@atlasmart.test");
    await officer.getByRole("heading", { name: "Deletion requests" }).waitFor();
    await officer.goto(`${ORIGIN}/requests/${request.requestId}`);
    const clock = officer.getByTestId("legal-clock");
    await clock.waitFor();
    expect(await clock.textContent()).toContain("CCPA 1798.130");
    const extend = clock.getByRole("button", { name: /^Extend the deadline to / });
    expect(await extend.isDisabled()).toBe(true);
    await checkA11y(officer, "request-extend-deadline");
    await clock.getByLabel("Why it needs more time").fill("Identity not yet verified");
    await extend.click();
    await clock.getByText(/Extended from .*: Identity not yet verified/).waitFor();
    // Once only: the form is gone, and the timeline and the evidence say it once, naming the officer.
    expect(await clock.getByRole("button").count()).toBe(0);
    await officer.getByTestId("timeline").getByText(/CCPA 1798\.130: due /).waitFor();
    const requestId = request.requestId;
    const entries = (await db().collection("deletionAudits").where("action", "==", "DEADLINE_EXTENDED").get()).docs.map((d) => d.data() as { requestId?: string; detail: { reasonText?: string }; actor: { type: string; id: string } });
    expect(entries.map((e) => [e.requestId, e.detail.reasonText, e.actor.type, e.actor.id])).toEqual([[requestId, "Identity not yet verified", "staff", "c-2001"]]);
    await shot(officer, "13-deadline-extended");
    expect(pageErrors).toEqual([]);
  }, 300_000);
});
