/**
 * What a function instance loads at its cold start: the whole codebase's entry (functions/lib/index.js, built by
 * `npm run build`). Cloud Logging's, Pub/Sub's and Cloud Storage's client libraries take about 0.8 s of CPU to load
 * between them and most instances (the callables that only read) never use them, so they are loaded at their first use
 * (platform/lazy-libraries.ts, platform/processors.ts#publishNotice). How long loading takes is the bench's to say; this
 * checks only what is loaded.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(__dirname, "..", "..", "..");
const ENTRY = join(ROOT, "functions", "lib", "index.js");

const loadedBy = (script: string): string[] =>
  JSON.parse(
    execFileSync(process.execPath, ["-e", `${script}; process.stdout.write(JSON.stringify(Object.keys(require.cache))); process.exit(0)`], {
      cwd: ROOT,
      encoding: "utf8",
      timeout: 30_000,
      // The metric line goes to stderr: not the test run's.
      stdio: ["ignore", "pipe", "ignore"],
    }),
  ) as string[];
const packages = (files: readonly string[]): string[] => [...new Set(files.flatMap((f) => /node_modules\/(@google-cloud\/[^/]+)\//.exec(f)?.[1] ?? []))].sort();

describe("a function instance's cold start", () => {
  it("does not load the Cloud Logging, Pub/Sub or Cloud Storage libraries until a metric, an anchor, a notice or an object needs them", () => {
    expect(existsSync(ENTRY), "functions/lib is built by npm run build, which npm test runs first").toBe(true);
    const atStart = packages(loadedBy(`require(${JSON.stringify(ENTRY)})`));
    expect(atStart).not.toContain("@google-cloud/logging");
    expect(atStart).not.toContain("@google-cloud/pubsub");
    expect(atStart).not.toContain("@google-cloud/storage");
    // What every instance needs is there: the check sees the entry's own libraries.
    expect(atStart).toContain("@google-cloud/firestore");
    // The first metric loads it: the lazy path works from the built code too.
    const metrics = join(ROOT, "functions", "lib", "platform", "metrics.js");
    const afterMetric = packages(loadedBy(`const m = require(${JSON.stringify(metrics)}); m.setMetricsTransport(null); m.setMetricsTransport(process.stderr); m.emitMetric("retention.holds", 1)`));
    expect(afterMetric).toContain("@google-cloud/logging");
  }, 60_000);
});
