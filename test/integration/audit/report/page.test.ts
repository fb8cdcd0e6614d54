/**
 * The dashboard, end to end: known data on the emulator, `npx retention report`, then headless Chromium
 * opens the page. The test fails on any script error or console error, on any network request, and unless
 * the page shows the numbers the data implies. The screenshot stays in artifacts/ for a person to look at.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { FieldValue, Timestamp } from "firebase-admin/firestore";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DAY_MS } from "../../../../functions/src/kernel/policy";
import { readHeads } from "../../../../functions/src/evidence/anchor";
import { recordEvidence } from "../../../../functions/src/evidence/store";
import { COLLECTIONS } from "../../../../functions/src/platform/firestore";
import { placeHold } from "../../../../functions/src/holds/service";
import { seedDemo } from "../../../../examples/atlasmart/seed";
import { collectReportData, renderReport, SAMPLE_PER_CODE } from "../../../../functions/src/audit/index";
import { clearAuth, clearFirestore, db } from "../../../helpers/emulator";
import { repoRoot } from "../../../helpers/policy";

const CHROMIUM = "/usr/bin/chromium";
const ARTIFACTS = join(repoRoot, "artifacts");
const HOUR = 3_600_000;

function npxRetention(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile("npx", ["retention", ...args], { cwd: repoRoot, env: process.env, timeout: 120_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stdout, stderr });
    });
  });
}

/** Known data: every number the page shows below follows from these writes. */
async function seedScenario(nowMs: number): Promise<void> {
  await clearFirestore();
  await clearAuth();
  await seedDemo({ nowMs, withAuth: true });
  const staff = { type: "staff" as const, id: "c-2001" };
  // Two holds: two held documents, two active hold records, two HOLD_PLACED evidence entries.
  await placeHold({ targetPath: "auditRecords/ar-001", reasonCode: "LITIGATION", releaseAfterMs: null, actor: staff, nowMs });
  await placeHold({ targetPath: "events/e-001", reasonCode: "FRAUD_INVESTIGATION", releaseAfterMs: null, actor: staff, nowMs });
  // Three soft-deleted documents, aged 12 hours, 3 days and 40 days.
  const softDelete = (path: string, ageMs: number) => db().doc(path).update({ lifecycleState: "SOFT_DELETED", softDeletedAt: Timestamp.fromMillis(nowMs - ageMs) });
  await softDelete("activity/a-002", 12 * HOUR);
  await softDelete("tenants/t-acme/orders/o-1001/messages/m-002", 3 * DAY_MS);
  await softDelete("userDirectory/u-1002", 40 * DAY_MS);
  // Two unfinished deletion requests: one due in 20 days, one two days past due (an OVERDUE_REQUEST finding).
  const requests = db().collection(COLLECTIONS.deletionRequests);
  await requests.doc("req-on-time").set({ uid: "u-1002", tenantId: "t-acme", state: "PENDING", requestedAt: Timestamp.fromMillis(nowMs - 10 * DAY_MS), dueAt: Timestamp.fromMillis(nowMs + 20 * DAY_MS) });
  await requests.doc("req-late").set({ uid: "u-9999", tenantId: "t-acme", state: "PROCESSING", requestedAt: Timestamp.fromMillis(nowMs - 32 * DAY_MS), dueAt: Timestamp.fromMillis(nowMs - 2 * DAY_MS) });
  // One MISSING_TTL finding.
  await db().doc("events/e-002").update({ expireAt: FieldValue.delete() });
  // Four TTL deletes, 30 min, 2 h, 10 h and 80 h after expiry: one in each of four buckets, one over the 72 h SLA.
  const expireAtMs = nowMs - 100 * HOUR;
  await recordEvidence(
    "sessions/s-old",
    ...[0.5, 2, 10, 80].map((lagHours, i) => ({
      action: "TTL_DELETE",
      actor: { type: "system" as const, id: "ttlDeleted-sessions" },
      decision: { reason: "SWEEPER", retentionClass: "session-30d" },
      policyVersion: "v1",
      atMs: expireAtMs + lagHours * HOUR,
      eventId: `evt-${i}`,
      paths: [`sessions/s-old-${i}`],
      detail: { expireAtMs, eventTimeMs: expireAtMs + lagHours * HOUR, deletionLagMs: lagHours * HOUR },
    })),
  );
}

describe("retention report (dashboard page in headless Chromium)", () => {
  let browser: Browser | undefined;
  const out = join(ARTIFACTS, "report.html");

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(`Chromium is not installed at ${CHROMIUM}: run \`apt-get update && apt-get install -y chromium\` (the report test never skips).`);
    }
    mkdirSync(ARTIFACTS, { recursive: true });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    });
  });

  afterAll(async () => {
    await browser?.close();
  });

  it("shows the numbers of the data it was given, with no script error and no network request", async () => {
    await seedScenario(Date.now());
    const run = await npxRetention(["report", "--out", out, "--json"]);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ out, auditOk: false, findings: 2, evidenceOk: true, evidenceChecked: 6 });
    const html = readFileSync(out, "utf8");
    expect(html).toContain("default-src 'none'");

    const page = await browser!.newPage({ viewport: { width: 1100, height: 900 } });
    const problems: string[] = [];
    const requests: string[] = [];
    page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
    page.on("console", (m) => {
      if (m.type() === "error" || m.type() === "warning") problems.push(`console.${m.type()}: ${m.text()}`);
    });
    page.on("request", (r) => requests.push(r.url()));
    const url = pathToFileURL(out).href;
    await page.goto(url, { waitUntil: "load" });
    await page.screenshot({ path: join(ARTIFACTS, "report.png"), fullPage: true });

    const text = async (testId: string) => (await page.getByTestId(testId).first().textContent())?.trim();
    const expected: Record<string, string> = {
      "documents": "18",
      "hold-count": "2",
      "hold-records": "2",
      "soft-deleted": "3",
      "candidates-total": "3",
      "candidates-user-delete": "3",
      "candidates-session-30d": "0",
      "requests-open": "2",
      "requests-overdue": "1",
      "requests-due-overdue": "1",
      "requests-due-14-30d": "1",
      "requests-due-<7d": "0",
      "soft-delete-age-<1d": "1",
      "soft-delete-age-1-7d": "1",
      "soft-delete-age-7-30d": "0",
      "soft-delete-age-30-90d": "1",
      "soft-delete-age->90d": "0",
      "ttl-delay-count": "4",
      "ttl-delay-over-sla": "1",
      "ttl-delay-<1h": "1",
      "ttl-delay-1-6h": "1",
      "ttl-delay-6-24h": "1",
      "ttl-delay-24-72h": "0",
      "ttl-delay->72h": "1",
      "findings-total": "2",
      "findings-MISSING_TTL": "1",
      "findings-OVERDUE_REQUEST": "1",
      "chain-ok": "verifies",
      "chain-checked": "6",
      // The two holds' chains and the TTL deletes' chain (two of them may share one).
      "chain-count": String((await readHeads()).size),
    };
    const shown: Record<string, string | undefined> = {};
    for (const id of Object.keys(expected)) shown[id] = await text(id);
    expect(shown).toEqual(expected);
    expect(await text("audit-status")).toBe("Audit: 2 finding(s)");
    expect(await text("chain-status")).toBe("Evidence ledger verifies");

    // The findings table lists both, and its inline script filters it.
    await expect(page.locator("#findings-table tbody tr").count()).resolves.toBe(2);
    await page.locator("#finding-filter").fill("MISSING_TTL");
    await expect(page.locator("#finding-shown").textContent()).resolves.toBe("1 of 2 shown");
    await expect(page.locator("#findings-table tbody tr:not([hidden])").textContent()).resolves.toContain("events/e-002");

    // Charts are inline SVG drawn on the server.
    expect(await page.locator("svg.chart").count()).toBeGreaterThanOrEqual(5);
    expect(problems).toEqual([]);
    expect(requests).toEqual([url]);
    await page.close();
  });

  it("lists every code's findings when a flood of one code passes the page's 200: the rarer ones are not crowded out", async () => {
    const nowMs = Date.now();
    await seedScenario(nowMs);
    // 205 documents of an unknown class, named to sort before every other finding's path.
    const template = (await db().doc("activity/a-001").get()).data()!;
    const batch = db().batch();
    for (let i = 0; i < 205; i++) batch.set(db().doc(`activity/a-flood-${String(i).padStart(3, "0")}`), { ...template, retentionClass: "forever-and-a-day" });
    await batch.commit();
    const data = await collectReportData({ nowMs, target: "the emulator" });
    expect(data.audit.totalFindings).toBe(207);
    expect(data.audit.byCode).toEqual({ UNKNOWN_CLASS: 205, MISSING_TTL: 1, OVERDUE_REQUEST: 1 });
    const listed = data.audit.findings.map((f) => `${f.code} ${f.path}`);
    expect(listed).toContain("MISSING_TTL events/e-002");
    expect(listed).toContain(`OVERDUE_REQUEST ${COLLECTIONS.deletionRequests}/req-late`);
    expect(listed.length).toBeLessThanOrEqual(200 + 2 * SAMPLE_PER_CODE);
    const html = renderReport(data);
    expect(html).toContain("207 finding(s)");
    expect(html).toContain("events/e-002");
  });
});
