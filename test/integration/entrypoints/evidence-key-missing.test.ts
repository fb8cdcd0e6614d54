/**
 * The real requestAccountDeletion callable (in-process, through its wrapper's `.run`) inside a function that has no
 * evidence key, as on emulators started without functions/.secret.local or a deployment that forgot to bind the
 * secret: its caller reads failed-precondition EVIDENCE_KEY_MISSING with what to fix, and nothing is written (the
 * request and its evidence commit together, and the missing key stops the transaction before its commit).
 */
import type { CallableRequest } from "firebase-functions/v2/https";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { seedDemo } from "../../../examples/atlasmart/seed";
import { requestAccountDeletion } from "../../../functions/src/entrypoints/callable/request-account-deletion";
import { clearAuth, clearFirestore, db } from "../../helpers/emulator";

type Runnable = { run: (req: CallableRequest) => unknown };
const ADA = { data: {}, auth: { uid: "u-1001", token: { tenantId: "t-acme" }, rawToken: "t" }, rawRequest: {} } as unknown as CallableRequest;
const call = () => Promise.resolve().then(() => (requestAccountDeletion as unknown as Runnable).run(ADA));
const count = async (collection: string) => (await db().collection(collection).count().get()).data().count;

describe("requestAccountDeletion in a function without the evidence key", () => {
  beforeEach(async () => {
    await clearFirestore();
    await clearAuth();
    await seedDemo({ nowMs: Date.now(), withAuth: false });
    vi.stubEnv("RETENTION_ENFORCE_APP_CHECK", "false");
  });
  afterEach(() => vi.unstubAllEnvs());

  it("refuses with failed-precondition EVIDENCE_KEY_MISSING, readable by the caller, and writes nothing", async () => {
    const evidenceBefore = await count("deletionAudits");
    // Inside a function the key comes from the secret's environment variable only (never the local file).
    vi.stubEnv("FUNCTION_TARGET", "requestAccountDeletion");
    vi.stubEnv("FUNCTIONS_EMULATOR", "true");
    vi.stubEnv("RETENTION_EVIDENCE_KEY", "");
    await expect(call()).rejects.toMatchObject({
      code: "failed-precondition",
      details: { reason: "EVIDENCE_KEY_MISSING" },
      message: expect.stringMatching(/^EVIDENCE_KEY_MISSING: .*functions\/\.secret\.local.*npm ci/) as string,
    });
    expect(await count("deletionRequests")).toBe(0);
    expect(await count("deletionAudits")).toBe(evidenceBefore);
  });

  it("with the key bound (positive control) the same call opens the request", async () => {
    vi.stubEnv("FUNCTION_TARGET", "requestAccountDeletion");
    vi.stubEnv("FUNCTIONS_EMULATOR", "true");
    vi.stubEnv("RETENTION_EVIDENCE_KEY", "k".repeat(64));
    await expect(call()).resolves.toMatchObject({ state: "PENDING" });
    expect(await count("deletionRequests")).toBe(1);
  });
});
