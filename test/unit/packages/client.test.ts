/**
 * The typed client as built (packages/client/dist, what an app installs): one function per callable, inputs
 * checked with the functions' own schemas before anything is sent. Calls over the wire are exercised by the
 * browser suite (test/e2e/console.test.ts) against the emulators.
 */
import { createRetentionClient, CALLABLE_NAMES, refusalReason, RetentionInputError } from "@atlasmart/retention-client";
import { deleteApp, initializeApp } from "firebase/app";
import { getFunctions } from "firebase/functions";
import { afterAll, describe, expect, it } from "vitest";

const app = initializeApp({ projectId: "demo-atlasmart-firestore", apiKey: "fake-api-key" }, "typed-client-unit");
afterAll(() => deleteApp(app));

describe("@atlasmart/retention-client", () => {
  it("has a function for every callable of the contract", () => {
    const client = createRetentionClient(getFunctions(app));
    expect(Object.keys(client).sort()).toEqual([...CALLABLE_NAMES].sort());
    for (const name of CALLABLE_NAMES) expect(typeof client[name]).toBe("function");
  });

  it("refuses an input its schema refuses before sending anything, naming the field", async () => {
    // A base URL nothing listens on: a call that went out would fail with a network error instead.
    const client = createRetentionClient(getFunctions(app), { baseUrl: "http://127.0.0.1:9/api" });
    const err = await client.listRetentionHolds({ pageSize: 0 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RetentionInputError);
    expect((err as RetentionInputError).issues[0]?.path).toBe("pageSize");
    await expect(client.placeRetentionHold({ targetPath: "a/../b", reasonCode: "LITIGATION" })).rejects.toBeInstanceOf(RetentionInputError);
    await expect(client.getDeletionStatus({ requestId: "x", extra: 1 } as never)).rejects.toBeInstanceOf(RetentionInputError);
  });

  it("takes a subject in the general form, and refuses a malformed one before sending", async () => {
    const client = createRetentionClient(getFunctions(app), { baseUrl: "http://127.0.0.1:9/api" });
    const err = await client.planDeletion({ subject: { type: "scope" } } as never).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RetentionInputError);
    await expect(client.listDeletionRequests({ subject: { type: "user", uid: "u-1" }, state: "PENDING" })).rejects.toBeInstanceOf(RetentionInputError);
    await expect(client.requestTenantDeletion({ subject: { type: "user", uid: "u-1" }, reason: "r" } as never)).rejects.toBeInstanceOf(RetentionInputError);
    // A well-formed one is sent (and fails only on the network: nothing listens there).
    const sent = await client.planDeletion({ subject: { type: "user", uid: "u-1", scope: "w-1" } }).catch((e: unknown) => e);
    expect(sent).not.toBeInstanceOf(RetentionInputError);
  });

  it("reads a refusal's machine code from details.reason", () => {
    expect(refusalReason({ code: "functions/permission-denied", details: { reason: "TWO_PERSON_RULE" } })).toBe("TWO_PERSON_RULE");
    expect(refusalReason(new Error("boom"))).toBeNull();
  });
});
