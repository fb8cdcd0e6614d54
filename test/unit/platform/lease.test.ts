import { Timestamp } from "firebase-admin/firestore";
import { describe, expect, it } from "vitest";
import { leaseOwner, leaseState } from "../../../functions/src/platform/lease";

const NOW = 1_800_000_000_000;
const lease = (owner: string, expiresAtMs: number) => ({ lease: { owner, expiresAt: Timestamp.fromMillis(expiresAtMs) } });

describe("leaseState", () => {
  it("is free without a lease, and free once another owner's lease expired", () => {
    expect(leaseState(undefined, "a", NOW)).toBe("free");
    expect(leaseState({}, "a", NOW)).toBe("free");
    expect(leaseState(lease("b", NOW), "a", NOW)).toBe("free");
  });

  it("is taken while another owner's lease runs", () => {
    expect(leaseState(lease("b", NOW + 1), "a", NOW)).toBe("taken");
  });

  it("is mine only while my lease runs", () => {
    expect(leaseState(lease("a", NOW + 1), "a", NOW)).toBe("mine");
  });

  it("is no longer mine once my lease expired, although nobody took it over", () => {
    expect(leaseState(lease("a", NOW), "a", NOW)).toBe("free");
    expect(leaseState(lease("a", NOW - 60_000), "a", NOW)).toBe("free");
  });

  it("names the owner of a lease, live or expired", () => {
    expect(leaseOwner(lease("a", NOW - 1))).toBe("a");
    expect(leaseOwner({})).toBeNull();
  });
});
