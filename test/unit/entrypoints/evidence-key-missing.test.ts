// A callable whose function has no evidence key answers with a refusal its caller can read (failed-precondition,
// EVIDENCE_KEY_MISSING, and how to fix it), not the INTERNAL an unknown error becomes. The key is still required:
// nothing is signed without it.
import { HttpsError, type CallableRequest } from "firebase-functions/v2/https";
import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { callable } from "../../../functions/src/entrypoints/callable/shared";
import { keyedSubjectHash } from "../../../functions/src/evidence/index";

type Runnable = { run: (req: CallableRequest) => unknown };
const request = { data: {}, auth: { uid: "u-1001", token: { tenantId: "t-acme" }, rawToken: "t" }, rawRequest: {} } as unknown as CallableRequest;
const run = (fn: unknown) => Promise.resolve().then(() => (fn as Runnable).run(request));

describe("a callable without the evidence key", () => {
  afterEach(() => vi.unstubAllEnvs());

  it("refuses with failed-precondition EVIDENCE_KEY_MISSING and a message that says how to fix it", async () => {
    vi.stubEnv("RETENTION_EVIDENCE_KEY", "");
    vi.stubEnv("FIRESTORE_EMULATOR_HOST", "");
    const probe = callable("probe", z.object({}).strict(), () => Promise.resolve({ hash: keyedSubjectHash("u-1001") }));
    const err: unknown = await run(probe).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HttpsError);
    const https = err as HttpsError;
    expect(https.code).toBe("failed-precondition");
    expect(https.details).toEqual({ reason: "EVIDENCE_KEY_MISSING" });
    expect(https.message).toMatch(/^EVIDENCE_KEY_MISSING: /);
    expect(https.message).toContain("RETENTION_EVIDENCE_KEY");
    expect(https.message).toContain("functions/.secret.local");
    expect(https.message).toContain("npm ci");
    // What the client SDK receives: the status and the message, not "INTERNAL".
    expect(https.toJSON()).toMatchObject({ status: "FAILED_PRECONDITION", message: https.message, details: { reason: "EVIDENCE_KEY_MISSING" } });
  });

  it("with the key the same callable signs; an unknown error still goes out untouched (the SDK's INTERNAL)", async () => {
    vi.stubEnv("RETENTION_EVIDENCE_KEY", "k".repeat(40));
    const probe = callable("probe", z.object({}).strict(), () => Promise.resolve({ hash: keyedSubjectHash("u-1001") }));
    await expect(run(probe)).resolves.toMatchObject({ hash: expect.stringMatching(/^[0-9a-f]{64}$/) as string });
    const boom = new Error("database on fire");
    const failing = callable("failing", z.object({}).strict(), () => Promise.reject(boom));
    await expect(run(failing)).rejects.toBe(boom);
  });
});
