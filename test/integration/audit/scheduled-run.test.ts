/**
 * The audit as a job: the scheduled body writes one retentionReports entry per run (a retry of the same
 * run rewrites it), logs ERROR when it finds anything, and emits its metric points; through the jobs
 * catalog (runRetentionJob, `retention run`) a dry run writes nothing.
 */
import { FieldValue } from "firebase-admin/firestore";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { auditOnSchedule } from "../../../functions/src/entrypoints/scheduled/retention-audit";
import { COLLECTIONS } from "../../../functions/src/platform/firestore";
import { placeHold } from "../../../functions/src/holds/service";
import { log } from "../../../functions/src/platform/logs";
import { METRICS_LOG_NAME, setMetricsTransport } from "../../../functions/src/platform/metrics";
import { JOBS } from "../../../functions/src/jobs/catalog";
import { PROJECT_ID, db } from "../../helpers/emulator";
import { policy } from "../../../functions/src/platform/registry";
import { captureMetrics, point } from "../../helpers/metrics";
import { freshDemo } from "./helpers";

const reports = async () => (await db().collection(COLLECTIONS.retentionReports).get()).docs;

describe("retentionAudit job", () => {
  beforeEach(async () => {
    await freshDemo();
  });
  afterEach(() => {
    setMetricsTransport(null);
    vi.restoreAllMocks();
  });

  it("a clean scheduled run stores one report, logs INFO, and emits zeros", async () => {
    const metrics = captureMetrics();
    const info = vi.spyOn(log, "info");
    const error = vi.spyOn(log, "error");
    const summary = await auditOnSchedule({ scheduleTime: "2026-12-01T03:30:00.000Z" });
    expect(summary).toMatchObject({ job: "retentionAudit", ok: true, findings: 0, dryRun: false });
    const stored = await reports();
    expect(stored.map((d) => d.id)).toEqual(["audit-2026-12-01T03:30:00.000Z"]);
    expect(stored[0]!.data()).toMatchObject({ kind: "retentionAudit", ok: true, totalFindings: 0, policyVersion: policy().version });
    expect(info).toHaveBeenCalledWith("audit.done", expect.objectContaining({ findings: 0 }));
    expect(error).not.toHaveBeenCalled();

    expect(point(metrics, "retention.audit_findings", { code: "MISSING_TTL" })).toEqual([0]);
    expect(point(metrics, "retention.holds", { kind: "documents" })).toEqual([0]);
    expect(point(metrics, "retention.candidates", { class: "session-30d" })).toEqual([0]);
    const sample = metrics.find((l) => l.metric === "retention.requests_past_due")!;
    expect(sample.logName).toBe(`projects/${PROJECT_ID}/logs/${METRICS_LOG_NAME}`);
    expect(sample.resource?.type).toBe("global");
    expect(sample.severity).toBe("INFO");
    expect(sample["logging.googleapis.com/labels"]).toMatchObject({ metric: "retention.requests_past_due" });
  });

  it("findings: logs ERROR, the report lists them, metrics count them, and a retried run rewrites the same report", async () => {
    await placeHold({ targetPath: "events/e-001", reasonCode: "LITIGATION", releaseAfterMs: null, actor: { type: "staff", id: "c-2001" }, nowMs: Date.now() });
    await db().doc("events/e-002").update({ expireAt: FieldValue.delete() });
    const metrics = captureMetrics();
    const error = vi.spyOn(log, "error");
    const event = { scheduleTime: "2026-12-02T03:30:00.000Z" };
    const summary = await auditOnSchedule(event);
    expect(summary).toMatchObject({ ok: false, findings: 1, byCode: { MISSING_TTL: 1 } });
    expect(error).toHaveBeenCalledWith("audit.findings", expect.objectContaining({ findings: 1, byCode: ["MISSING_TTL=1"] }));
    expect(point(metrics, "retention.ttl_missing")).toEqual([1]);
    expect(point(metrics, "retention.holds", { kind: "documents" })).toEqual([1]);
    expect(point(metrics, "retention.holds", { kind: "records" })).toEqual([1]);

    await auditOnSchedule(event);
    const stored = await reports();
    expect(stored).toHaveLength(1);
    expect(stored[0]!.data()).toMatchObject({
      ok: false,
      totalFindings: 1,
      findings: [{ path: "events/e-002", code: "MISSING_TTL", detail: expect.any(String) as unknown }],
    });
  });

  it("through the jobs catalog: a dry run reports without writing; a real run stores its report", async () => {
    const load = JOBS.retentionAudit;
    expect(load).toBeDefined();
    const run = await load!();
    const base = { nowMs: Date.now(), asOfMs: null, actor: { type: "staff" as const, id: "r-3001" } };
    expect(await run({ ...base, dryRun: true })).toMatchObject({ job: "retentionAudit", dryRun: true, ok: true, reportId: null });
    expect(await reports()).toHaveLength(0);
    const real = await run({ ...base, dryRun: false, correlationId: "corr-1" });
    expect(real.reportId).toMatch(/^audit-.*-corr-1$/);
    expect((await reports()).map((d) => d.id)).toEqual([real.reportId]);
  });

  it("an as-of run emits no metric points (its numbers describe a fictional now)", async () => {
    const metrics = captureMetrics();
    const run = await JOBS.retentionAudit!();
    const asOfMs = Date.now() + 400 * 86_400_000;
    const s = await run({ nowMs: asOfMs, asOfMs, dryRun: true, actor: { type: "staff", id: "r-3001" } });
    expect(s).toMatchObject({ ok: false, asOf: new Date(asOfMs).toISOString() });
    expect(metrics).toEqual([]);
  });
});
