/**
 * What the deploy reads: each function's endpoint metadata (`__endpoint`, the manifest firebase-tools builds
 * from the code). Retry and resources are deploy-time settings, so they are checked where the deploy sees them.
 */
import { beforeAll, describe, expect, it, vi } from "vitest";

interface Endpoint {
  secretEnvironmentVariables?: { key: string }[];
  taskQueueTrigger?: {
    retryConfig: { maxAttempts: number; minBackoffSeconds: number; maxBackoffSeconds: number; maxDoublings: number };
    rateLimits: { maxConcurrentDispatches: unknown; maxDispatchesPerSecond: unknown };
  };
  timeoutSeconds: number | null;
  availableMemoryMb: number | null;
  eventTrigger?: { eventType: string; retry: boolean };
}
const endpointOf = (fn: unknown): Endpoint => (fn as { __endpoint: Endpoint }).__endpoint;

describe("deployed function settings", () => {
  beforeAll(() => {
    // The 1st-gen Auth trigger names its project in its endpoint.
    vi.stubEnv("GCLOUD_PROJECT", "demo-atlasmart-firestore");
  });

  it("the Auth-delete backstop retries a failed delivery (failure policy on)", async () => {
    const { onAuthUserDeleted } = await import("../../../functions/src/entrypoints/auth/on-auth-user-deleted");
    expect(endpointOf(onAuthUserDeleted).eventTrigger).toMatchObject({ eventType: "providers/firebase.auth/eventTypes/user.delete", retry: true });
  });

  it("planDeletion and placeRetentionHold get the time a tenant-sized plan or hold needs, not a callable's 60 s", async () => {
    const { planDeletion } = await import("../../../functions/src/entrypoints/callable/plan-deletion");
    const { placeRetentionHold } = await import("../../../functions/src/entrypoints/callable/place-retention-hold");
    const { runRetentionJob } = await import("../../../functions/src/entrypoints/callable/run-retention-job");
    expect(endpointOf(planDeletion)).toMatchObject({ timeoutSeconds: 540, availableMemoryMb: 2048 });
    expect(endpointOf(placeRetentionHold)).toMatchObject({ timeoutSeconds: 540, availableMemoryMb: 512 });
    expect(endpointOf(runRetentionJob)).toMatchObject({ timeoutSeconds: 540, availableMemoryMb: 2048 });
  });

  it("every deployed function binds the evidence key (each may append evidence, and appending needs the key)", async () => {
    const deployed = (await import("../../../functions/src/index")) as Record<string, unknown>;
    const functions = Object.entries(deployed).flatMap(([name, fn]) =>
      (fn as { __endpoint?: unknown }).__endpoint ? [[name, fn] as const] : Object.entries(fn as Record<string, unknown>).map(([sub, f]) => [`${name}-${sub}`, f] as const),
    );
    expect(functions.length).toBeGreaterThan(15);
    // The processors' keys only where notices are signed and receipts checked (docs/decisions/0039-processors.md).
    const processorKeys = ["RETENTION_PROCESSOR_SEARCH_INDEX_KEY", "RETENTION_PROCESSOR_EMAIL_PLATFORM_KEY"];
    const signing = new Set(["deliverProcessorNotice", "ackProcessorNotice"]);
    for (const [name, fn] of functions) {
      expect(endpointOf(fn).secretEnvironmentVariables?.map((s) => s.key), name).toEqual(["RETENTION_EVIDENCE_KEY", ...(signing.has(name) ? processorKeys : [])]);
    }
  });

  it("deliverProcessorNotice retries with backoff for about an hour, inside the relay's requeue interval", async () => {
    const { deliverProcessorNotice, DELIVERY_RETRY } = await import("../../../functions/src/entrypoints/tasks/deliver-processor-notice");
    const { REQUEUE_AFTER_MS } = await import("../../../functions/src/processors/sweep");
    expect(endpointOf(deliverProcessorNotice).taskQueueTrigger!.retryConfig).toMatchObject(DELIVERY_RETRY);
    // Cloud Tasks' backoff: doubling maxDoublings times from minBackoff, then linear, capped at maxBackoff.
    let wait = 0;
    let step: number = DELIVERY_RETRY.minBackoffSeconds;
    for (let retry = 1; retry < DELIVERY_RETRY.maxAttempts; retry++) {
      wait += Math.min(step, DELIVERY_RETRY.maxBackoffSeconds);
      step = retry < DELIVERY_RETRY.maxDoublings ? step * 2 : step + DELIVERY_RETRY.minBackoffSeconds * 2 ** DELIVERY_RETRY.maxDoublings;
    }
    expect(wait * 1000).toBeGreaterThan(30 * 60_000);
    expect(wait * 1000 + 10 * 60_000).toBeLessThan(REQUEUE_AFTER_MS);
  });

  it("purgeRequest runs as many tasks at once as RETENTION_PURGE_REQUEST_CONCURRENCY says, and its retries outlast a crashed delivery's lease", async () => {
    const { purgeRequest } = await import("../../../functions/src/entrypoints/tasks/purge-request");
    const { SETTINGS } = await import("../../../functions/src/config/params");
    const trigger = endpointOf(purgeRequest).taskQueueTrigger!;
    // A deploy-time param: the deploy resolves it (a CEL expression in the manifest firebase-tools reads).
    expect(String(trigger.rateLimits.maxConcurrentDispatches)).toBe("params.RETENTION_PURGE_REQUEST_CONCURRENCY");
    expect(endpointOf(purgeRequest)).toMatchObject({ timeoutSeconds: 540 });
    // A delivery that finds another holding the request (BUSY) is retried; when the other crashed, the retry can
    // take over only once its lease has expired. Cloud Tasks' backoff: doubling maxDoublings times, then linear,
    // capped at maxBackoffSeconds.
    const r = trigger.retryConfig;
    let waited = 0;
    for (let attempt = 1; attempt < r.maxAttempts; attempt++) {
      const doubled = r.minBackoffSeconds * 2 ** Math.min(attempt - 1, r.maxDoublings);
      const linear = attempt - 1 > r.maxDoublings ? r.minBackoffSeconds * 2 ** r.maxDoublings * (attempt - 1 - r.maxDoublings) : 0;
      waited += Math.min(r.maxBackoffSeconds, doubled + linear);
    }
    expect(waited).toBeGreaterThan(SETTINGS.purgeLeaseSeconds.default);
  });
});
