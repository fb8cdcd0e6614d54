/**
 * App Check on the user-facing callables, through the real callable wrapper (`.run`, in-process), with the
 * setting on (production's default) and off (the emulators' .env.local). Over HTTP the Functions emulator runs
 * with it off, which every callable suite exercises.
 */
import type { CallableRequest } from "firebase-functions/v2/https";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { cancelAccountDeletion } from "../../../../functions/src/entrypoints/callable/cancel-account-deletion";
import { getDeletionStatus } from "../../../../functions/src/entrypoints/callable/get-deletion-status";
import { placeRetentionHold } from "../../../../functions/src/entrypoints/callable/place-retention-hold";
import { requestAccountDeletion } from "../../../../functions/src/entrypoints/callable/request-account-deletion";
import { requestDataExport } from "../../../../functions/src/entrypoints/callable/request-data-export";
import { getDataExport } from "../../../../functions/src/entrypoints/callable/get-data-export";
import { seedDemo } from "../../../../examples/atlasmart/seed";
import { clearAuth, clearFirestore, db } from "../../../helpers/emulator";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "../../../helpers/policy";

type Runnable = { run: (req: CallableRequest) => unknown };
const ADA = { uid: "u-1001", token: { tenantId: "t-acme" } };
const CLARA = { uid: "c-2001", token: { roles: ["compliance"] } };
const APP = { appId: "1:123:web:abc", token: { app_id: "1:123:web:abc" } };

function request(data: unknown, auth: { uid: string; token: Record<string, unknown> }, app?: typeof APP): CallableRequest {
  return { data, auth: { uid: auth.uid, token: auth.token, rawToken: "t" }, ...(app ? { app } : {}), rawRequest: {} } as unknown as CallableRequest;
}
const call = (fn: unknown, req: CallableRequest) => Promise.resolve((fn as Runnable).run(req));
const requests = async () => (await db().collection("deletionRequests").get()).size;

describe("App Check on the user-facing callables", () => {
  beforeEach(async () => {
    await clearFirestore();
    await clearAuth();
    await seedDemo({ nowMs: Date.now(), withAuth: false });
  });
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it("on (the default): requests without App Check are refused first, with APP_CHECK_REQUIRED, and write nothing", async () => {
    vi.stubEnv("RETENTION_ENFORCE_APP_CHECK", "");
    for (const [fn, data] of [
      [requestAccountDeletion, {}],
      [cancelAccountDeletion, { requestId: "r-1" }],
      [getDeletionStatus, { requestId: "r-1" }],
      [requestDataExport, {}],
      [getDataExport, { exportId: "x-1" }],
    ] as const) {
      await expect(call(fn, request(data, ADA))).rejects.toMatchObject({ code: "unauthenticated", details: { reason: "APP_CHECK_REQUIRED" } });
      // Before the payload is even looked at.
      await expect(call(fn, request({ bogus: 1 }, ADA))).rejects.toMatchObject({ details: { reason: "APP_CHECK_REQUIRED" } });
    }
    expect(await requests()).toBe(0);
    expect((await db().collection("dataExports").get()).size).toBe(0);
    vi.stubEnv("RETENTION_ENFORCE_APP_CHECK", "true");
    await expect(call(requestAccountDeletion, request({}, ADA))).rejects.toMatchObject({ details: { reason: "APP_CHECK_REQUIRED" } });
    expect(await requests()).toBe(0);
    // With a verified App Check token the call goes through.
    const opened = (await call(requestAccountDeletion, request({}, ADA, APP))) as { requestId: string };
    expect(await requests()).toBe(1);
    const st = (await call(getDeletionStatus, request({ requestId: opened.requestId }, ADA, APP))) as { state: string };
    expect(st.state).toBe("PENDING");
    await expect(call(cancelAccountDeletion, request({ requestId: opened.requestId }, ADA, APP))).resolves.toMatchObject({ state: "CANCELLED" });
  });

  it("on: staff callables are not user-facing and do not ask for App Check", async () => {
    vi.stubEnv("RETENTION_ENFORCE_APP_CHECK", "true");
    await expect(call(placeRetentionHold, request({ targetPath: "tenants/t-acme/orders/o-1002", reasonCode: "LITIGATION" }, CLARA))).resolves.toMatchObject({
      holdId: expect.any(String) as string,
    });
  });

  it("off (the emulators): the user-facing callables answer without App Check", async () => {
    vi.stubEnv("RETENTION_ENFORCE_APP_CHECK", "false");
    const opened = (await call(requestAccountDeletion, request({}, ADA))) as { requestId: string };
    expect(await requests()).toBe(1);
    await expect(call(getDeletionStatus, request({ requestId: opened.requestId }, ADA))).resolves.toMatchObject({ state: "PENDING" });
    await expect(call(cancelAccountDeletion, request({ requestId: opened.requestId }, ADA))).resolves.toMatchObject({ state: "CANCELLED" });
    // The emulators' param file is what turns it off there; nothing else does.
    expect(readFileSync(join(repoRoot, "functions", ".env.local"), "utf8")).toMatch(/^RETENTION_ENFORCE_APP_CHECK=false$/m);
  });

  it("a malformed setting fails loudly rather than opening the door", async () => {
    vi.stubEnv("RETENTION_ENFORCE_APP_CHECK", "yes");
    await expect(call(requestAccountDeletion, request({}, ADA))).rejects.toThrow(/RETENTION_ENFORCE_APP_CHECK must be true or false/);
    expect(await requests()).toBe(0);
  });
});
