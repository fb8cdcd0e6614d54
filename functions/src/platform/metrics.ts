import type { LogSync } from "@google-cloud/logging";
import type { Writable } from "node:stream";
import { cloudLogging } from "./lazy-libraries";
import { logResource } from "./log-resource";
import { settings } from "./settings";

/**
 * Metrics as structured log entries (docs/METRICS.md). Each call writes one JSON line through
 * `@google-cloud/logging`'s `logSync` to a dedicated log; Cloud Logging log-based metrics (docs/METRICS.md)
 * turn them into time series and alerts. Writing to stdout costs no network call, so a function can emit
 * metrics on its hot path without losing them when its CPU is throttled after the response.
 */
export const METRICS_LOG_NAME = "retention-metrics";

/**
 * The metric names, one per metric in docs/METRICS.md. Business-expiry numbers (`business_expiry_*`, requests past
 * due) and storage-cleanup numbers (`ttl_cleanup_lag_ms`, deletion counts) are separate metrics on purpose:
 * a late sweeper never hides a visibility failure, and the other way round.
 */
export const METRIC_NAMES = [
  "retention.candidates",
  "retention.ttl_missing",
  "retention.ttl_invalid",
  "retention.holds",
  "retention.soft_delete_age",
  "retention.backfill_checkpoint",
  "retention.backfill_errors",
  "retention.ttl_deletions",
  "retention.purge_deletions",
  "retention.ttl_cleanup_lag_ms",
  "retention.ttl_cleanup_overdue",
  "retention.business_expiry_overdue",
  "retention.trigger_failures",
  "retention.trigger_retries",
  "retention.orphans",
  "retention.archive_verification_failures",
  "retention.requests_past_due",
  "retention.requests_answered",
  "retention.audit_findings",
] as const;
export type MetricName = (typeof METRIC_NAMES)[number];

export type MetricLabels = Readonly<Record<string, string>>;

let sink: LogSync | undefined;
let transport: Writable | null | undefined;

/**
 * Where metric lines go: stdout (the default, which Cloud Functions ships to Cloud Logging), another stream
 * (the CLI uses stderr so stdout stays the command's output; tests capture lines), or null to drop them.
 */
export function setMetricsTransport(stream: Writable | null): void {
  transport = stream;
  sink = undefined;
}

function logSync(): LogSync | null {
  if (transport === null) return null;
  if (!sink) {
    const logging = new (cloudLogging().Logging)({ projectId: settings.projectId() });
    // useMessageField false: the payload's fields land at the top of jsonPayload, where metric filters look.
    sink = logging.logSync(METRICS_LOG_NAME, transport ?? process.stdout, { useMessageField: false });
  }
  return sink;
}

/**
 * Sets up the metrics log now. The first metric otherwise pays it: loading the Cloud Logging library, and about
 * 0.15 s of CPU because its client builds API clients (which these metrics never call) when it is constructed. A
 * function instance pays it once; the bench calls this before its clock, as it loads modules (docs/BENCHMARKS.md).
 */
export function prepareMetrics(): void {
  logSync();
}

/**
 * Emits one metric point: `jsonPayload.metric`, `jsonPayload.value` and the labels (as entry labels, for
 * label extractors, and in the payload). Labels carry classes, codes and buckets, never ids of people.
 */
export function emitMetric(name: MetricName, value: number, labels: MetricLabels = {}): void {
  if (!Number.isFinite(value)) throw new Error(`metric ${name}: value must be a finite number, got ${value}`);
  const log = logSync();
  if (!log) return;
  const projectId = settings.projectId();
  const entry = log.entry(
    { severity: "INFO", resource: logResource(projectId), labels: { metric: name, ...labels } },
    { metric: name, value, ...labels },
  );
  log.write(entry);
}
