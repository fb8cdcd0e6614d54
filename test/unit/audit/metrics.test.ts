import { Writable } from "node:stream";
import { afterEach, describe, expect, it, vi } from "vitest";
import { emitMetric, METRICS_LOG_NAME, setMetricsTransport } from "../../../functions/src/platform/metrics";
import { settings } from "../../../functions/src/platform/settings";

const project = settings.projectId();

function capture(): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  setMetricsTransport(
    new Writable({
      write(chunk: Buffer, _e, done) {
        for (const l of chunk.toString("utf8").split("\n")) if (l.trim()) out.push(JSON.parse(l) as Record<string, unknown>);
        done();
      },
    }),
  );
  return out;
}

describe("metrics as structured log entries", () => {
  afterEach(() => {
    setMetricsTransport(null);
    vi.restoreAllMocks();
    delete process.env.K_SERVICE;
    delete process.env.K_REVISION;
  });

  it("writes one JSON line per point to the dedicated log, with the value and labels in the payload and the entry labels", () => {
    const lines = capture();
    emitMetric("retention.candidates", 7, { class: "session-30d" });
    const points = lines.filter((l) => l.metric === "retention.candidates");
    expect(points).toHaveLength(1);
    expect(points[0]).toMatchObject({
      metric: "retention.candidates",
      value: 7,
      class: "session-30d",
      severity: "INFO",
      logName: `projects/${project}/logs/${METRICS_LOG_NAME}`,
      resource: { type: "global", labels: { project_id: project } },
      "logging.googleapis.com/labels": { metric: "retention.candidates", class: "session-30d" },
    });
  });

  it("names the Cloud Run revision as its resource on Cloud Functions 2nd gen (no metadata-server probe)", () => {
    process.env.K_SERVICE = "retentionaudit";
    process.env.K_REVISION = "retentionaudit-00007";
    const lines = capture();
    emitMetric("retention.orphans", 0, { kind: "subject" });
    expect(lines.find((l) => l.metric === "retention.orphans")).toMatchObject({
      resource: { type: "cloud_run_revision", labels: { service_name: "retentionaudit", revision_name: "retentionaudit-00007" } },
    });
  });

  it("drops points when the transport is null, and refuses non-finite values", () => {
    const stdout = vi.spyOn(process.stdout, "write");
    setMetricsTransport(null);
    emitMetric("retention.holds", 1);
    expect(stdout.mock.calls.filter(([chunk]) => String(chunk).includes("retention.holds"))).toEqual([]);
    capture();
    expect(() => emitMetric("retention.holds", Number.NaN)).toThrow(/finite/);
  });
});
