/**
 * The compliance console on the social example, in Debian's Chromium (playwright-core) on the example's own
 * emulator project (demo-social, `npm run test:social`): the same console build as AtlasMart's, reading the
 * registry the functions enforce at run time. The sign-in page offers the example's demo users; its compliance
 * officer sees Ana's deletion request (a user in no scope: no tenant anywhere) and its plan, checks hold paths
 * against the social registry (a chat is a subtree root; a path of AtlasMart's is not governed here), places a
 * hold on a chat and cannot release it; the second officer releases it; the evidence view explains the chat. Every
 * view is checked with axe-core (no serious or critical violation) and photographed into artifacts/console-social/.
 * Any script error on a page fails the test.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import AxeBuilder from "@axe-core/playwright";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SOCIAL_PASSWORD } from "../../examples/social/data";
import { seedSocial, seedSocialScenario } from "../../examples/social/seed";
import { clearAuth, clearFirestore, db, waitFor } from "../helpers/emulator";
import { repoRoot } from "../helpers/policy";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const ORIGIN = process.env.CONSOLE_ORIGIN!;
const SHOTS = join(repoRoot, "artifacts", "console-social");
const DANA = "dana.compliance@social.test";
const ELI = "eli.compliance@social.test";

const axeResults: { view: string; violations: { id: string; impact: string | null; nodes: number }[] }[] = [];

/** axe-core on the page as it is: no serious or critical violation; every result is kept for the report. */
async function checkA11y(page: Page, view: string): Promise<void> {
  const r = await new AxeBuilder({ page }).analyze();
  axeResults.push({ view, violations: r.violations.map((v) => ({ id: v.id, impact: v.impact ?? null, nodes: v.nodes.length })) });
  const bad = r.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect(bad.map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(" ")).join("; ")}`), `axe on ${view}`).toEqual([]);
}

const shot = (page: Page, name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

describe("the compliance console on the social example, in a browser", () => {
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  const pageErrors: string[] = [];

  async function newTab(who: string): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    contexts.push(context);
    const page = await context.newPage();
    page.on("pageerror", (e) => pageErrors.push(`${who}: ${e.message}`));
    page.on("console", (m) => {
      if (m.type() === "error") pageErrors.push(`${who} console: ${m.text()}`);
    });
    return page;
  }

  async function signInHere(page: Page, email: string): Promise<void> {
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill(SOCIAL_PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByTestId("signed-in-as").getByText(email).waitFor();
  }

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`Chromium is not at ${CHROMIUM}: apt-get install -y chromium (CI's .ci/run installs it).`);
    mkdirSync(SHOTS, { recursive: true });
    await clearFirestore();
    await clearAuth();
    // What `npm run start:social` seeds: the example's data and users, and Ana's request in its grace period.
    const nowMs = Date.now();
    await seedSocial({ nowMs });
    await seedSocialScenario({ nowMs });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  }, 180_000);

  afterAll(async () => {
    let n = 0;
    for (const c of contexts) for (const p of c.pages()) await p.screenshot({ path: join(SHOTS, `last-${n++}.png`), fullPage: true }).catch(() => undefined);
    for (const c of contexts) await c.close();
    await browser?.close();
    writeFileSync(join(SHOTS, "axe.json"), JSON.stringify(axeResults, null, 2));
  });

  it("an officer sees Ana's request, holds a chat and cannot release it; the second officer does; the evidence explains it", async () => {
    const tab = await newTab("dana");
    await tab.goto(`${ORIGIN}/requests`);
    await tab.getByRole("heading", { name: "Sign in" }).waitFor();
    // The example's own demo users, never AtlasMart's.
    await tab.getByText(DANA).waitFor();
    expect(await tab.locator("body").textContent()).not.toContain("atlasmart");
    await checkA11y(tab, "sign-in");
    await shot(tab, "01-sign-in");

    // 1. Ana's request, in words that name no tenant: the app has no scope kind.
    await signInHere(tab, DANA);
    await tab.getByRole("heading", { name: "Deletion requests" }).waitFor();
    const row = tab.getByTestId("requests-row").filter({ hasText: "u-ana" });
    await row.waitFor();
    const rowText = (await row.textContent())!;
    expect(rowText).toContain("PENDING");
    expect(rowText).toMatch(/Waiting out its grace period until \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC/);
    expect(rowText).toContain("the person themselves, in the app");
    expect(rowText).not.toMatch(/tenant/i);
    await tab.getByText("Each request erases one person's data.").waitFor();
    await checkA11y(tab, "requests");
    await shot(tab, "02-requests");
    await row.getByRole("link").first().click();
    const plan = tab.getByTestId("plan");
    await plan.waitFor();
    for (const collection of ["posts", "messages", "notifications"]) expect(await plan.getByRole("row").filter({ hasText: collection }).count(), collection).toBeGreaterThan(0);
    expect(await plan.getByRole("row").filter({ hasText: "chats" }).textContent()).toContain("SHARED_THREAD");
    await checkA11y(tab, "request-detail");
    await shot(tab, "03-request-detail");

    // 2. The hold form speaks the social registry: its paths, its reasons; AtlasMart's paths are not governed here.
    await tab.getByRole("link", { name: "Holds" }).click();
    await tab.getByRole("heading", { name: "Retention holds" }).waitFor();
    const target = tab.getByLabel("Document path", { exact: true });
    expect(await target.getAttribute("placeholder")).not.toMatch(/tenant|orders|acme/);
    const pathCheck = tab.getByTestId("path-check");
    expect(await pathCheck.textContent()).toContain("or chats/{chatId}, which holds everything under it");
    await target.fill("tenants/t-acme/orders/o-1002");
    await pathCheck.getByText("No retention policy covers “orders”").waitFor();
    await target.fill("chats/ch-trio");
    await pathCheck.getByText("A subtree root: the hold covers it and everything under it.").waitFor();
    const reasons = await tab.getByLabel("Reason for the hold").locator("option").allTextContents();
    expect(reasons.some((r) => r.startsWith("ABUSE_INVESTIGATION"))).toBe(true);
    expect(reasons.some((r) => r.startsWith("FINANCE_RETENTION"))).toBe(false);
    await tab.getByLabel("Reason for the hold").selectOption("LITIGATION");
    await tab.getByLabel(/^Note/).fill("dispute over the weekend trip");
    await tab.getByRole("button", { name: "Place hold" }).click();
    const holdId = (await tab.getByTestId("hold-placed").textContent())!.replace("Hold placed: ", "").trim();
    expect(holdId).toMatch(/^[A-Za-z0-9]{20}$/);
    const mine = tab.getByTestId("holds-row").filter({ hasText: holdId });
    await mine.getByText("Awaiting a second officer").waitFor();
    expect(await mine.textContent()).toContain("Dana (compliance)");
    expect(await mine.getByRole("button", { name: /Release/ }).count()).toBe(0);
    // The hold's flagging task marks the chat and its messages held (the fence holds them from the start).
    await waitFor(async () => (await db().doc("chats/ch-trio/messages/m-04").get()).get("legalHold") === true, "the held chat's messages flagged", 120_000);
    await checkA11y(tab, "holds");
    await shot(tab, "04-holds-awaiting-second-officer");

    // 3. The second officer releases it, in the same tab after a sign-out.
    await tab.getByRole("button", { name: "Sign out" }).first().click();
    await tab.getByRole("heading", { name: "Sign in" }).waitFor();
    await signInHere(tab, ELI);
    await tab.getByRole("link", { name: "Holds" }).click();
    const theirs = tab.getByTestId("holds-row").filter({ hasText: holdId });
    await theirs.getByRole("button", { name: `Release hold ${holdId}` }).click();
    await theirs.getByLabel("Why release it?").fill("dispute settled");
    await theirs.getByRole("button", { name: "Confirm release" }).click();
    await tab.getByTestId("hold-released").getByText(`Hold ${holdId} on chats/ch-trio is released.`).waitFor();
    await tab.getByLabel("Show", { exact: true }).selectOption("RELEASED");
    await tab.getByTestId("holds-row").filter({ hasText: holdId }).getByTestId("released").getByText("by Eli (compliance)").waitFor();
    await checkA11y(tab, "holds-history");
    await shot(tab, "05-holds-history");
    expect((await db().doc(`retentionHolds/${holdId}`).get()).get("state")).toBe("RELEASED");

    // 4. The evidence view explains the chat: held, then released by the second officer, and it verifies.
    await tab.getByRole("link", { name: "Evidence" }).click();
    await tab.getByLabel("Path or id").fill("chats/ch-trio");
    await tab.getByRole("button", { name: "Explain" }).click();
    await tab.getByTestId("chain-status").getByText("Evidence verifies").waitFor();
    const evidence = tab.getByTestId("evidence");
    await evidence.getByRole("row").filter({ hasText: "HOLD_RELEASED" }).getByTestId("release-reason").getByText("Released because: “dispute settled”").waitFor();
    await tab.getByLabel("Path or id").fill("chats");
    await tab.getByRole("button", { name: "Explain" }).click();
    await tab.getByText("“chats” is a collection, so add the document's id after it").waitFor();
    await checkA11y(tab, "evidence");
    await shot(tab, "06-evidence");

    expect(pageErrors).toEqual([]);
  });
});
