/**
 * SubjectChecker's bookkeeping (audit/subjects.ts) against stand-ins for Auth and Firestore, where the order of events
 * can be held still: a record that joins a lookup under way, in a scope that lookup did not read, waits for the next
 * one instead of being lost or judged without its scope. The rules it applies are tested in rules.test.ts; the
 * checker against the real emulators in test/integration/audit.
 */
import { describe, expect, it, vi } from "vitest";
import type { Finding } from "../../../functions/src/audit/rules";

interface Request {
  uid?: string;
  subjectType: "user" | "tenant";
  tenantId: string;
  state: string;
}

const world = vi.hoisted(() => ({
  accounts: new Set<string>(),
  requests: [] as Request[],
  getUsersCalls: [] as number[],
  /** When set, a scope query waits for it. */
  scopeGate: null as Promise<void> | null,
  scopeQueries: 0,
  /** The registry's subjects.user.systemUids, read when a checker is made. */
  systemUids: [] as string[],
}));

vi.mock("firebase-admin/auth", () => ({
  getAuth: () => ({
    getUsers: (ids: { uid: string }[]) => {
      world.getUsersCalls.push(ids.length);
      return Promise.resolve({ users: ids.filter((i) => world.accounts.has(i.uid)).map((i) => ({ uid: i.uid })) });
    },
  }),
}));

vi.mock("../../../functions/src/platform/firestore", () => {
  type Clause = [string, string, unknown];
  const query = (clauses: Clause[]) => ({
    where: (f: string, op: string, v: unknown) => query([...clauses, [f, op, v]]),
    select: () => query(clauses),
    get: async () => {
      if (clauses.some(([f]) => f === "subjectType")) {
        world.scopeQueries++;
        if (world.scopeGate) await world.scopeGate;
      }
      const holds = (r: Request) => clauses.every(([f, op, v]) => (op === "in" ? (v as unknown[]).includes(r[f as keyof Request]) : r[f as keyof Request] === v));
      return { docs: world.requests.filter(holds).map((r) => ({ get: (f: string) => r[f as keyof Request] })) };
    },
  });
  return { adminApp: () => ({}), COLLECTIONS: { deletionRequests: "deletionRequests" }, db: () => ({ collection: () => query([]) }) };
});

vi.mock("../../../functions/src/platform/registry", async () => {
  const { DataMapEntrySchema } = await import("../../../functions/src/kernel/policy-schema");
  const profile = DataMapEntrySchema.parse({ id: "profile", kind: "doc", path: "tenants/{tenantId}/users/{uid}", action: "delete" });
  return { policy: () => ({ dataMap: () => [profile], registry: { subjects: { user: { scopeLookups: [], systemUids: world.systemUids }, scope: { key: "tenantId" } } } }) };
});

const { SubjectChecker } = await import("../../../functions/src/audit/subjects");

const none = () => undefined;

describe("SubjectChecker", () => {
  it("a record that joins a lookup under way, in a scope the lookup did not read, waits for the next one", async () => {
    world.requests = [{ subjectType: "tenant", tenantId: "t-closing", state: "PROCESSING" }];
    const found: Finding[] = [];
    const checker = new SubjectChecker(false, (fs) => found.push(...fs));
    await checker.offer("tenants/t-closing/users/u-gone", none, false);
    let release!: () => void;
    world.scopeGate = new Promise<void>((r) => (release = r));
    const flushing = checker.flush();
    await vi.waitFor(() => expect(world.scopeQueries).toBe(1));
    // The lookup reads t-closing's requests; meanwhile the scan finds the same member in another tenant.
    await checker.offer("tenants/t-staying/users/u-gone", none, false);
    world.scopeGate = null;
    release();
    await flushing;
    await checker.flush();
    expect(found.map((f) => f.path)).toEqual(["tenants/t-staying/users/u-gone"]);
    // Auth was asked once; the second pass read only the new scope.
    expect(world.getUsersCalls).toEqual([1]);
    expect(world.scopeQueries).toBe(2);
    expect(checker.checked).toBe(1);
  });

  it("never looks up or reports the registry's uids of no person (systemUids)", async () => {
    world.requests = [];
    world.getUsersCalls = [];
    world.systemUids = ["bot-moderator"];
    try {
      const found: Finding[] = [];
      const checker = new SubjectChecker(false, (fs) => found.push(...fs));
      await checker.offer("tenants/t-a/users/bot-moderator", none, false);
      await checker.offer("tenants/t-a/users/u-left", none, false);
      await checker.flush();
      expect(found.map((f) => f.path)).toEqual(["tenants/t-a/users/u-left"]);
      expect(world.getUsersCalls).toEqual([1]);
    } finally {
      world.systemUids = [];
    }
  });
});
