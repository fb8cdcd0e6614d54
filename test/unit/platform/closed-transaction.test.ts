import { describe, expect, it } from "vitest";
import { isClosedTransaction, retryClosedTransaction } from "../../../functions/src/platform/transactions";

const closed = Object.assign(new Error("3 INVALID_ARGUMENT: Transaction is invalid or closed."), { code: 3, details: "Transaction is invalid or closed." });

describe("a transaction the emulator closed", () => {
  it("is told apart from every other failure", () => {
    expect(isClosedTransaction(closed)).toBe(true);
    expect(isClosedTransaction(Object.assign(new Error("bad"), { code: 3, details: "Invalid field path" }))).toBe(false);
    expect(isClosedTransaction(Object.assign(new Error("aborted"), { code: 10, details: "Transaction is invalid or closed." }))).toBe(false);
    expect(isClosedTransaction(null)).toBe(false);
  });

  it("runs again while it was closed, up to its tries, and never on another failure", async () => {
    let calls = 0;
    await expect(retryClosedTransaction(async () => (++calls < 3 ? Promise.reject(closed) : "done"))).resolves.toBe("done");
    expect(calls).toBe(3);
    calls = 0;
    await expect(retryClosedTransaction(async () => (++calls, Promise.reject(closed)), 2)).rejects.toBe(closed);
    expect(calls).toBe(2);
    calls = 0;
    const other = new Error("PURGE_RECORD_MISMATCH");
    await expect(retryClosedTransaction(async () => (++calls, Promise.reject(other)))).rejects.toBe(other);
    expect(calls).toBe(1);
  });
});
