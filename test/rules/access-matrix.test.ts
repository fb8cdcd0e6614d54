// The access matrix: every role against every collection for get, create, update and delete. Each cell of
// MATRIX is an explicit expected outcome; the tests are generated from it, one per cell.
import { readFileSync } from "node:fs";
import { assertFails, assertSucceeds } from "@firebase/rules-unit-testing";
import { deleteDoc, doc, getDoc, setDoc, updateDoc, type DocumentData, type DocumentSnapshot } from "firebase/firestore";
import { describe, expect, it } from "vitest";
import { collectionsInRules } from "../../functions/src/kernel/registry-check";
import { policy } from "../../functions/src/platform/registry";
import { IDENTITIES, RULES_FILE, ROLES, clientAs, governedDocs, readRaw, useRulesEnv } from "../helpers/rules";

type Op = "get" | "create" | "update" | "delete";
type Outcome = "allow" | "deny";
const A: Outcome = "allow";
const D: Outcome = "deny";
/** One outcome per role, in ROLES order: anonymous, owner, peer, otherTenant, compliance, retentionAdmin. */
type Row = readonly [Outcome, Outcome, Outcome, Outcome, Outcome, Outcome];
const NONE: Row = [D, D, D, D, D, D];

interface Target {
  collection: string;
  /** A seeded document: read, updated and deleted. */
  path: string;
  /** Where a create goes, and what it writes (governed data carries its retention fields). */
  createPath: string;
  createData: () => DocumentData;
  /** A business-field change: denials come from who is asking, not from touching a retention field. */
  update: DocumentData;
  expect: Readonly<Record<Op, Row>>;
}

const now = () => Date.now();
const governed = (path: string, data: DocumentData, tenantId = "t-acme"): (() => DocumentData) =>
  () => governedDocs([{ path, tenantId, data }], now())[0]!.data;
/** A collection no client may touch: every cell denied. */
const closed = (collection: string, id: string, data: DocumentData, update: DocumentData, label = collection): Target => ({
  collection: label,
  path: `${collection}/${id}`,
  createPath: `${collection}/new-by-client`,
  createData: () => data,
  update,
  expect: { get: NONE, create: NONE, update: NONE, delete: NONE },
});

const MATRIX: readonly Target[] = [
  {
    collection: "tenants",
    path: "tenants/t-acme",
    createPath: "tenants/t-new",
    createData: governed("tenants/t-new", { name: "New Tenant" }, "t-new"),
    update: { name: "Acme Renamed" },
    expect: { get: [D, A, A, D, D, D], create: NONE, update: NONE, delete: NONE },
  },
  {
    collection: "tenants/{t}/users",
    path: "tenants/t-acme/users/u-1001",
    createPath: "tenants/t-acme/users/u-1003",
    createData: governed("tenants/t-acme/users/u-1003", { uid: "u-1003", displayName: "Forged User" }),
    update: { displayName: "Ada King" },
    expect: { get: [D, A, A, D, D, D], create: NONE, update: [D, A, D, D, D, D], delete: NONE },
  },
  {
    collection: "tenants/{t}/orders",
    path: "tenants/t-acme/orders/o-1001",
    createPath: "tenants/t-acme/orders/o-1003",
    createData: governed("tenants/t-acme/orders/o-1003", { customerId: "u-1001", status: "PAID", totalMinor: 1 }),
    update: { status: "CANCELLED" },
    expect: { get: [D, A, D, D, D, D], create: NONE, update: NONE, delete: NONE },
  },
  {
    collection: "tenants/{t}/orders/{o}/messages",
    path: "tenants/t-acme/orders/o-1001/messages/m-001",
    createPath: "tenants/t-acme/orders/o-1001/messages/m-003",
    createData: governed("tenants/t-acme/orders/o-1001/messages/m-003", { authorId: "u-1001", text: "Any news?" }),
    update: { text: "Where is my parcel now?" },
    expect: { get: [D, A, D, D, D, D], create: NONE, update: NONE, delete: NONE },
  },
  {
    collection: "userDirectory",
    path: "userDirectory/u-1001",
    createPath: "userDirectory/u-1003",
    createData: governed("userDirectory/u-1003", { uid: "u-1003" }),
    update: { uid: "u-1001-renamed" },
    expect: { get: [D, A, D, D, D, D], create: NONE, update: NONE, delete: NONE },
  },
  {
    collection: "activity",
    path: "activity/a-001",
    createPath: "activity/a-003",
    createData: governed("activity/a-003", { subjectUid: "u-1001", type: "SIGNED_IN" }),
    update: { type: "ORDER_CANCELLED" },
    expect: { get: [D, A, D, D, D, D], create: NONE, update: NONE, delete: NONE },
  },
  {
    collection: "sessions",
    path: "sessions/s-1001",
    createPath: "sessions/s-1003",
    createData: governed("sessions/s-1003", { uid: "u-1001" }),
    update: { device: "laptop" },
    expect: { get: [D, A, D, D, D, D], create: NONE, update: NONE, delete: NONE },
  },
  {
    collection: "sessions/{s}/tokens",
    path: "sessions/s-1001/tokens/tk-1001",
    createPath: "sessions/s-1001/tokens/tk-1003",
    createData: governed("sessions/s-1001/tokens/tk-1003", { kind: "refresh" }),
    update: { kind: "access" },
    expect: { get: NONE, create: NONE, update: NONE, delete: NONE },
  },
  {
    collection: "events",
    path: "events/e-001",
    createPath: "events/e-003",
    createData: governed("events/e-003", { type: "PAGE_VIEW" }),
    update: { type: "CHECKOUT_DONE" },
    expect: { get: NONE, create: NONE, update: NONE, delete: NONE },
  },
  {
    collection: "auditRecords",
    path: "auditRecords/ar-001",
    createPath: "auditRecords/ar-002",
    createData: governed("auditRecords/ar-002", { action: "REFUND_ISSUED", actorUid: "u-1001" }),
    update: { action: "NOTHING_HAPPENED" },
    expect: { get: [D, D, D, D, A, D], create: NONE, update: NONE, delete: NONE },
  },
  closed("deletionRequests", "dr-1001", { subjectUid: "u-1001", tenantId: "t-acme", state: "PENDING" }, { state: "CANCELLED" }),
  closed("retentionHolds", "h-001", { targetPath: "tenants/t-acme", reasonCode: "LITIGATION", state: "ACTIVE" }, { state: "RELEASED" }),
  closed("deletionAudits", "000000000001", { seq: 2, decision: "PURGE", prevHash: "a".repeat(64), hash: "c".repeat(64) }, { reason: "EDITED" }),
  closed("processedEvents", "evt-0001", { eventId: "evt-0002" }, { eventId: "evt-0003" }),
  closed("archives", "auditRecords__ar-001", { sourcePath: "auditRecords/ar-001", verified: true }, { verified: false }),
  closed("retentionJobs", "evidence-chain-head", { leaseExpiresAt: 0 }, { seq: 0 }),
  closed("deletionAudits", "s0042-000000000001", { shard: "s0042", seq: 2, prevHash: "d".repeat(64), hash: "c".repeat(64) }, { mac: "0".repeat(64) }, "deletionAudits (a sharded chain)"),
  closed("retentionJobs", "evidence-head-s0042", { seq: 9, hash: "c".repeat(64) }, { seq: 0 }, "retentionJobs (a chain head)"),
  closed("retentionReports", "rr-0001", { findings: [] }, { findings: ["EDITED"] }),
  // An access export is the owner's data, yet no client reads it directly, the owner included: it is paged to them by
  // getDataExport, which checks who asks and that it has not expired (docs/decisions/0040-legal-clocks-and-access.md).
  closed("dataExports", "ax-1001", { uid: "u-1001", state: "READY", parts: 1 }, { state: "PENDING" }, "dataExports (the owner's own)"),
  closed("dataExports/ax-1001/exportParts", "000000", { uid: "u-1001", file: "manifest.json", data: "{}" }, { data: "[]" }, "dataExports/{x}/exportParts"),
  // The processors' outbox: a client must neither read whom an erasure notified nor forge an acknowledgement.
  closed("processorNotices", "dr-1001~search-index", { requestId: "dr-1001", processor: "search-index", state: "SENT" }, { state: "ACKNOWLEDGED", receiptId: "forged" }),
  closed("scratchpad", "x-001", { note: "new" }, { note: "changed" }, "scratchpad (no rule names it)"),
];

describe("access matrix (role x collection x operation)", () => {
  const env = useRulesEnv();
  const cells = MATRIX.flatMap((t) =>
    (["get", "create", "update", "delete"] as const).flatMap((op) =>
      ROLES.map((role, i) => ({ t, op, role, expected: t.expect[op][i]! })),
    ),
  );

  it("has a row for every collection the rules or the registry name", () => {
    const rows = new Set(MATRIX.map((t) => t.path.split("/").slice(-2)[0]));
    const named = [...collectionsInRules(readFileSync(RULES_FILE, "utf8")), ...policy().knownCollectionIds()];
    expect(named.filter((c) => !rows.has(c))).toEqual([]);
  });

  it.each(cells.map((c) => [`${IDENTITIES[c.role].label} | ${c.t.collection} | ${c.op} | ${c.expected}`, c] as const))(
    "%s",
    async (_name, { t, op, role, expected }) => {
      const db = clientAs(env(), role);
      const attempt = run(db, t, op);
      if (expected === "deny") {
        await assertFails(attempt);
        await expectUntouched(t, op);
      } else {
        const result = await assertSucceeds(attempt);
        // An allowed read must have returned the seeded document, not an empty snapshot.
        if (op === "get") expect((result as DocumentSnapshot).exists()).toBe(true);
        if (op === "update") expect(await readRaw(env(), t.path)).toMatchObject(t.update);
      }
    },
  );

  function run(db: ReturnType<typeof clientAs>, t: Target, op: Op): Promise<unknown> {
    switch (op) {
      case "get":
        return getDoc(doc(db, t.path));
      case "create":
        return setDoc(doc(db, t.createPath), t.createData());
      case "update":
        return updateDoc(doc(db, t.path), t.update);
      case "delete":
        return deleteDoc(doc(db, t.path));
    }
  }

  /** A denied write leaves the data as seeded. */
  async function expectUntouched(t: Target, op: Op): Promise<void> {
    if (op === "create") expect(await readRaw(env(), t.createPath)).toBeUndefined();
    if (op === "update" || op === "delete") {
      const after = await readRaw(env(), t.path);
      expect(after).toBeDefined();
      for (const [k, v] of Object.entries(t.update)) expect(after?.[k]).not.toEqual(v);
    }
  }
});
