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
import { DEMO_PASSWORD } from "../../functions/src/demo/atlasmart";
import { DAY_MS } from "../../functions/src/kernel/policy";
import { writeGoverned } from "../../functions/src/platform/governed-repo";
import { seedDemo } from "../../functions/src/demo/seed";
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

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

describe("the compliance console in a browser", () => {
  let browser: Browser;
  const pageErrors: string[] = [];
  const contexts: BrowserContext[] = [];

  async function signIn(email: string): Promise<Page> {
    const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 900 } });
    contexts.push(context);
    const page = await context.newPage();
    page.on("pageerror", (e) => pageErrors.push(`${email}: ${e.message}`));
    page.on("console", (m) => {
      if (m.type() === "error") pageErrors.push(`${email} console: ${m.text()}`);
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
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  }, 120_000);

  afterAll(async () => {
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

    // 2. An officer sees the request and its plan.
    const clara = await signIn("clara.compliance@atlasmart.test");
    await clara.getByRole("heading", { name: "Deletion requests" }).waitFor();
    const row = clara.getByTestId("requests-row").filter({ hasText: requestId });
    await row.waitFor();
    expect(await row.textContent()).toContain("PENDING");
    expect(await row.textContent()).toMatch(/due in/);
    expect(await row.textContent()).toContain("u-1001 (tenant t-acme)");
    await checkA11y(clara, "requests");
    await shot(clara, "02-requests");
    await row.getByRole("link", { name: requestId }).click();
    await clara.getByTestId("timeline").getByText("REQUESTED").waitFor();
    expect(await clara.getByTestId("request-facts").textContent()).toContain("u-1001 (tenant t-acme), opened by u-1001 via user");
    // Nothing is erased yet: no "fully gone by" date, no ERASURE_COMPLETE.
    expect(await clara.getByTestId("fully-gone-by").textContent()).toBe("not yet: the erasure has not finished");
    expect(await clara.getByTestId("erasure-complete").textContent()).toBe("not yet");
    const plan = clara.getByTestId("plan");
    await plan.waitFor();
    expect(await plan.getByRole("row").filter({ hasText: "orders" }).textContent()).toContain("FINANCE_RETENTION");
    await checkA11y(clara, "request-detail");
    await shot(clara, "03-request-detail");

    // 3. Officer 1 places a FINANCE_RETENTION hold; the path is checked before anything is sent.
    await clara.getByRole("link", { name: "Holds" }).click();
    await clara.getByRole("heading", { name: "Retention holds" }).waitFor();
    await clara.getByLabel("Document or tenant path").fill("tenants/t-acme/pets/p-1");
    await clara.getByTestId("path-check").getByText("NOT_GOVERNED_PATH").waitFor();
    await clara.getByLabel("Document or tenant path").fill("tenants/t-acme/orders/o-1002");
    await clara.getByTestId("path-check").getByText("class finance-7y").waitFor();
    await clara.getByLabel("Reason for the hold").selectOption("FINANCE_RETENTION");
    await clara.getByLabel(/^Note/).fill("tax year 2026");
    await clara.getByRole("button", { name: "Place hold" }).click();
    const placed = await clara.getByTestId("hold-placed").textContent();
    const holdId = placed!.replace("Hold placed: ", "").trim();
    expect(holdId).toMatch(/^[A-Za-z0-9]{20}$/);
    // 4. Officer 1 cannot release it: the console says why, and the server refuses too.
    const mine = clara.getByTestId("holds-row").filter({ hasText: holdId });
    await mine.getByText("Awaiting a second officer").waitFor();
    expect(await mine.getByRole("button", { name: /Release/ }).count()).toBe(0);
    const claraClient = await clientFor("clara.compliance@atlasmart.test");
    await expect(claraClient.releaseRetentionHold({ holdId, reason: "mine" })).rejects.toSatisfy((e: unknown) => refusalReason(e) === "TWO_PERSON_RULE");
    await checkA11y(clara, "holds");
    await shot(clara, "04-holds-awaiting-second-officer");

    // 5. Officer 2 finds it by its reason and releases it.
    const dev = await signIn("dev.compliance@atlasmart.test");
    await dev.getByRole("link", { name: "Holds" }).click();
    await dev.getByRole("heading", { name: "Retention holds" }).waitFor();
    await dev.getByLabel("Reason", { exact: true }).selectOption("FINANCE_RETENTION");
    await dev.getByRole("button", { name: "Apply" }).click();
    const theirs = dev.getByTestId("holds-row").filter({ hasText: holdId });
    await theirs.getByRole("button", { name: `Release hold ${holdId}` }).click();
    await theirs.getByLabel("Why release it?").fill("tax year closed");
    await theirs.getByRole("button", { name: "Confirm release" }).click();
    await dev.getByTestId("holds-empty").waitFor();
    await dev.getByLabel("Show", { exact: true }).selectOption("RELEASED");
    await dev.getByRole("button", { name: "Apply" }).click();
    await dev.getByTestId("holds-row").filter({ hasText: holdId }).getByText("by c-2002").waitFor();
    await checkA11y(dev, "holds-history");
    await shot(dev, "05-holds-history");
    expect((await db().doc(`retentionHolds/${holdId}`).get()).get("state")).toBe("RELEASED");

    // 6. A retention-admin approves a tripped run: a hundred days on, a mass deletion of events trips the brake.
    const now = Date.now();
    for (let i = 0; i < EVENTS; i++) await writeGoverned(`events/bulk-${String(i).padStart(2, "0")}`, { type: "X" }, "t-acme", now);
    const asOf = new Date(now + 100 * DAY_MS).toISOString();
    const ritaClient = await clientFor("rita.admin@atlasmart.test");
    const first = await ritaClient.runRetentionJob({ job: "nightlyPurge", asOf });
    const waiting = (first.brake as { waiting: { runKey: string; unitKey: string }[] }).waiting.find((w) => w.unitKey === "sweep-events")!;
    expect(waiting).toBeDefined();
    const rita = await signIn("rita.admin@atlasmart.test");
    await rita.getByRole("heading", { name: "Purge approvals" }).waitFor();
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

    // 7. The evidence view explains a purged path: what, who, why, who allowed it; and exports it.
    await clara.getByRole("link", { name: "Evidence" }).click();
    await clara.getByLabel("Path or id").fill("events/bulk-00");
    await clara.getByRole("button", { name: "Explain" }).click();
    await clara.getByTestId("chain-status").getByText("Evidence verifies").waitFor();
    const evidence = clara.getByTestId("evidence");
    await evidence.getByRole("row").filter({ hasText: "PURGE_BATCH" }).first().waitFor();
    expect(await evidence.getByRole("row").filter({ hasText: "PURGE_BRAKE_APPROVED" }).count()).toBeGreaterThan(0);
    expect(await evidence.getByRole("row").filter({ hasText: "PURGE_BRAKE_DECIDED" }).filter({ hasText: "staff r-3001" }).count()).toBe(1);
    const summary = await clara.getByTestId("summary").textContent();
    expect(summary).toContain("PURGE_BATCH by the system (nightlyPurge)");
    expect(summary).toContain("allowed by: ");
    expect(summary).toMatch(/PURGE_BRAKE_APPROVED by the system \(nightlyPurge\): RETENTION_ADMIN_APPROVED, policy v\d+, approved by r-3001/);
    await checkA11y(clara, "evidence");
    await shot(clara, "08-evidence");
    const [csv] = await Promise.all([clara.waitForEvent("download"), clara.getByRole("button", { name: "Export CSV" }).click()]);
    const csvText = readFileSync(await csv.path(), "utf8");
    expect(csvText.split("\r\n")[0]).toBe("id,chain,seq,at,action,actorType,actorId,reason,policyVersion,requestId,holdId,correlationId,manifestHash,role,verified,hash,paths");
    expect(csvText).toContain("PURGE_BATCH");
    const [json] = await Promise.all([clara.waitForEvent("download"), clara.getByRole("button", { name: "Export JSON" }).click()]);
    const exported = JSON.parse(readFileSync(await json.path(), "utf8")) as { query: { kind: string; value: string }; entries: { action: string }[] };
    expect(exported.query).toEqual({ kind: "path", value: "events/bulk-00" });
    expect(exported.entries.map((e) => e.action)).toContain("PURGE_BATCH");

    // 8. The dashboard draws the report's charts from live data.
    await clara.getByRole("link", { name: "Dashboard" }).click();
    await clara.getByTestId("chart-candidates").locator("svg").waitFor({ timeout: 120_000 });
    expect(Number(await clara.getByTestId("tile-documents").textContent())).toBeGreaterThan(0);
    expect(await clara.getByTestId("dashboard-chain").textContent()).toBe("Evidence ledger verifies");
    await checkA11y(clara, "dashboard");
    await shot(clara, "09-dashboard");

    // 9. A customer is refused: a clear page, and not one call for data. (Ada's account went with her purge.)
    const apiCalls: string[] = [];
    const customer = await signIn("ben@atlasmart.test");
    customer.on("request", (r) => {
      if (r.url().includes("/api/")) apiCalls.push(r.url());
    });
    await customer.getByTestId("not-authorised").waitFor();
    await customer.getByRole("heading", { name: "Not authorised" }).waitFor();
    await customer.goto(`${ORIGIN}/holds`);
    await customer.getByTestId("not-authorised").waitFor();
    expect(apiCalls).toEqual([]);
    await checkA11y(customer, "not-authorised");
    await shot(customer, "10-not-authorised");

    expect(pageErrors).toEqual([]);
  }, 600_000);
});
