import { Writable } from "node:stream";
import { setMetricsTransport } from "../../functions/src/platform/metrics";

export interface MetricLine {
  metric?: string;
  value?: number;
  logName?: string;
  resource?: { type: string };
  severity?: string;
  "logging.googleapis.com/labels"?: Record<string, string>;
  [k: string]: unknown;
}

/** Sends metric points to an array (until `setMetricsTransport(null)`), one parsed JSON line each. */
export function captureMetrics(): MetricLine[] {
  const lines: MetricLine[] = [];
  setMetricsTransport(
    new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString("utf8").split("\n")) if (l.trim()) lines.push(JSON.parse(l) as MetricLine);
        done();
      },
    }),
  );
  return lines;
}

/** The values of one series, optionally narrowed to points carrying the given labels. */
export const point = (lines: readonly MetricLine[], metric: string, labels: Record<string, string> = {}): (number | undefined)[] =>
  lines.filter((l) => l.metric === metric && Object.entries(labels).every(([k, v]) => l[k] === v)).map((l) => l.value);
