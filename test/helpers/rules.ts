/**
 * Shared set-up for the security-rules suites (test/rules): the rules test environment, the roles a client
 * signs in as, and the AtlasMart fixture whose retention fields come from the real registry (class by path,
 * TTL from the class), so the rules are tested against documents shaped as the server writes them.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { initializeTestEnvironment, type RulesTestEnvironment } from "@firebase/rules-unit-testing";
import { Timestamp, doc, getDoc, writeBatch, type DocumentData, type Firestore } from "firebase/firestore";
import { afterAll, beforeAll, beforeEach } from "vitest";
import { DEMO_DOCS, type DemoDoc } from "../../examples/atlasmart/data";
import { DAY_MS } from "../../functions/src/kernel/policy";
import { computeExpireAt, computeRetainUntil } from "../../functions/src/kernel/retention";
import { policy } from "../../functions/src/platform/registry";

/** The worker's project (test/helpers/worker-project.ts), where the other suites of the worker write too. */
export const RULES_PROJECT_ID = process.env.GCLOUD_PROJECT ?? "demo-atlasmart-firestore";
export const RULES_FILE = resolve(import.meta.dirname, "..", "..", "firestore.rules");

/** A rules environment on the emulator; another app's rules file (an example's) under a project id of its own. */
export async function startRulesEnv(opts: { rulesFile?: string; projectId?: string } = {}): Promise<RulesTestEnvironment> {
  const hostPort = process.env.FIRESTORE_EMULATOR_HOST;
  if (!hostPort) throw new Error("FIRESTORE_EMULATOR_HOST is not set: run under scripts/emulators.mjs");
  const sep = hostPort.lastIndexOf(":");
  const host = hostPort.slice(0, sep);
  const port = Number(hostPort.slice(sep + 1));
  if (!host || !Number.isInteger(port)) throw new Error(`FIRESTORE_EMULATOR_HOST must be host:port, got ${hostPort}`);
  return initializeTestEnvironment({
    projectId: opts.projectId ?? RULES_PROJECT_ID,
    firestore: { rules: readFileSync(opts.rulesFile ?? RULES_FILE, "utf8"), host, port },
  });
}

/** The callers every collection is tested against, in the column order of the access matrix. */
export const ROLES = ["anonymous", "owner", "peer", "otherTenant", "compliance", "retentionAdmin"] as const;
export type Role = (typeof ROLES)[number];

export interface Identity {
  /** null: not signed in. */
  uid: string | null;
  /** Custom claims. Deliberately loose: some tests sign in with malformed claims. */
  claims: Record<string, unknown>;
  label: string;
}

export const IDENTITIES: Readonly<Record<Role, Identity>> = {
  anonymous: { uid: null, claims: {}, label: "anonymous" },
  owner: { uid: "u-1001", claims: { tenantId: "t-acme" }, label: "app user u-1001@t-acme (owner)" },
  peer: { uid: "u-1002", claims: { tenantId: "t-acme" }, label: "app user u-1002@t-acme (peer)" },
  otherTenant: { uid: "u-9001", claims: { tenantId: "t-other" }, label: "app user u-9001@t-other" },
  compliance: { uid: "c-2001", claims: { roles: ["compliance"] }, label: "compliance c-2001" },
  retentionAdmin: { uid: "r-3001", claims: { roles: ["retention-admin"] }, label: "retention-admin r-3001" },
};

/**
 * A client Firestore signed in as `who`. rules-unit-testing hands out a compat instance; the modular API
 * unwraps it at run time, so it is typed as the modular Firestore the suites use.
 */
export function clientAs(env: RulesTestEnvironment, who: Role | Identity): Firestore {
  const id = typeof who === "string" ? IDENTITIES[who] : who;
  const ctx = id.uid === null ? env.unauthenticatedContext() : env.authenticatedContext(id.uid, id.claims);
  return ctx.firestore() as unknown as Firestore;
}

export interface FixtureDoc {
  path: string;
  data: DocumentData;
}

/** A second tenant, so isolation is proven against data that exists and u-9001 has its own data to read. */
const OTHER_TENANT_DOCS: readonly DemoDoc[] = [
  { path: "tenants/t-other", tenantId: "t-other", data: { name: "Other Goods" } },
  { path: "tenants/t-other/users/u-9001", tenantId: "t-other", data: { uid: "u-9001", displayName: "Noor Haddad" } },
  {
    path: "tenants/t-other/orders/o-9001",
    tenantId: "t-other",
    data: { customerId: "u-9001", customerName: "Noor Haddad", shippingAddress: "9 Far Street", status: "PAID", totalMinor: 1500 },
    ageDays: 2,
  },
  {
    path: "tenants/t-other/orders/o-9001/messages/m-9001",
    tenantId: "t-other",
    data: { authorId: "u-9001", text: "Gift wrap, please." },
    timestampFields: ["sentAt"],
    ageDays: 2,
  },
  { path: "userDirectory/u-9001", tenantId: "t-other", data: { uid: "u-9001" } },
  { path: "activity/a-9001", tenantId: "t-other", data: { subjectUid: "u-9001", type: "ORDER_PLACED" }, ageDays: 2 },
  { path: "sessions/s-9001", tenantId: "t-other", data: { uid: "u-9001" }, ageDays: 1 },
];

/**
 * Governed documents as the write helper stores them at `nowMs`: class from the registry by path, anchor
 * `createdAt`, `expireAt` only for TTL classes (children carry their parent's), `retainUntil` for classes
 * with a duration. Parents must come before their children.
 */
export function governedDocs(docs: readonly DemoDoc[], nowMs: number): FixtureDoc[] {
  const pol = policy();
  const expiryByPath = new Map<string, number | null>();
  return docs.map((d) => {
    const cls = pol.classForPath(d.path);
    if (!cls) throw new Error(`fixture document ${d.path} is in no retention class`);
    const createdAtMs = nowMs - (d.ageDays ?? 0) * DAY_MS;
    const parent = pol.expiryParentOf(d.path);
    const expireAtMs = computeExpireAt(cls, createdAtMs, { parentExpireAtMs: parent ? (expiryByPath.get(parent) ?? null) : null });
    expiryByPath.set(d.path, expireAtMs);
    const retainUntilMs = computeRetainUntil(cls, createdAtMs);
    const data: DocumentData = {
      ...d.data,
      ...Object.fromEntries((d.timestampFields ?? []).map((f) => [f, Timestamp.fromMillis(createdAtMs)])),
      retentionClass: cls.id,
      lifecycleState: "ACTIVE",
      tenantId: d.tenantId,
      policyVersion: pol.version,
      createdAt: Timestamp.fromMillis(createdAtMs),
      legalHold: false,
      holdIds: [],
    };
    if (expireAtMs !== null) data.expireAt = Timestamp.fromMillis(expireAtMs);
    if (retainUntilMs !== null) data.retainUntil = Timestamp.fromMillis(retainUntilMs);
    return { path: d.path, data };
  });
}

/** One document per control-plane collection, shaped as the server writes them. */
function controlPlaneDocs(nowMs: number): FixtureDoc[] {
  const at = (days: number) => Timestamp.fromMillis(nowMs + days * DAY_MS);
  return [
    // The owner's own access export and one of its parts (access/service.ts): no client reads them directly.
    { path: "dataExports/ax-1001", data: { uid: "u-1001", state: "READY", parts: 1, expireAt: at(7) } },
    { path: "dataExports/ax-1001/exportParts/000000", data: { index: 0, file: "manifest.json", chunk: 0, encoding: "utf8", data: "{}", expireAt: at(7) } },
    {
      path: "deletionRequests/dr-1001",
      data: { subjectUid: "u-1001", tenantId: "t-acme", state: "PENDING", requestedAt: at(-1), graceEndsAt: at(6), policyVersion: "v1" },
    },
    {
      path: "retentionHolds/h-001",
      data: { targetPath: "tenants/t-acme/orders/o-1002", reasonCode: "FINANCE_RETENTION", state: "ACTIVE", placedBy: "c-2001", placedAt: at(-2) },
    },
    {
      path: "deletionAudits/000000000001",
      data: { seq: 1, actor: { kind: "system" }, decision: "TTL_DELETE", reason: "AUTHORIZED_BY_POLICY", policyVersion: "v1", prevHash: "0".repeat(64), hash: "a".repeat(64) },
    },
    { path: "processedEvents/evt-0001", data: { eventId: "evt-0001", processedAt: at(-1), expireAt: at(6) } },
    {
      path: "archives/auditRecords__ar-001",
      data: { sourcePath: "auditRecords/ar-001", sha256: "b".repeat(64), verified: true, retentionClass: "audit-7y", retainUntil: at(2545) },
    },
    { path: "retentionJobs/evidence-chain-head", data: { seq: 1, hash: "a".repeat(64) } },
    {
      path: "deletionAudits/s0042-000000000001",
      data: { shard: "s0042", seq: 1, action: "TTL_DELETE", decision: { reason: "SWEEPER" }, policyVersion: "v1", prevHash: "0".repeat(64), hash: "d".repeat(64), mac: "e".repeat(64), keyId: "f".repeat(16) },
    },
    { path: "retentionJobs/evidence-head-s0042", data: { seq: 1, hash: "d".repeat(64) } },
    { path: "retentionReports/rr-0001", data: { job: "retentionAudit", findings: [], generatedAt: at(-1) } },
    { path: "processorNotices/dr-1001~search-index", data: { requestId: "dr-1001", processor: "search-index", state: "SENT", deadlineAt: at(7) } },
  ];
}

/** What every rules test starts from: the demo, a second tenant, the control plane and one unclassified doc. */
export function fixture(nowMs = Date.now()): FixtureDoc[] {
  return [
    ...governedDocs([...DEMO_DOCS, ...OTHER_TENANT_DOCS], nowMs),
    ...controlPlaneDocs(nowMs),
    { path: "scratchpad/x-001", data: { note: "a collection no rule names" } },
  ];
}

/** Writes documents with the rules off, standing in for the Admin SDK. `merge` patches existing ones. */
export async function seed(env: RulesTestEnvironment, docs: readonly FixtureDoc[], opts: { merge?: boolean } = {}): Promise<void> {
  await env.withSecurityRulesDisabled(async (ctx) => {
    const db = ctx.firestore() as unknown as Firestore;
    const batch = writeBatch(db);
    for (const d of docs) {
      if (opts.merge) batch.set(doc(db, d.path), d.data, { merge: true });
      else batch.set(doc(db, d.path), d.data);
    }
    await batch.commit();
  });
}

/** Reads a document with the rules off, to check what a write really left behind. */
export async function readRaw(env: RulesTestEnvironment, path: string): Promise<DocumentData | undefined> {
  let data: DocumentData | undefined;
  await env.withSecurityRulesDisabled(async (ctx) => {
    data = (await getDoc(doc(ctx.firestore() as unknown as Firestore, path))).data();
  });
  return data;
}

/**
 * The lifecycle every rules suite shares: one environment per file and, before each test, an empty emulator
 * seeded with fixture(), so no test depends on another's writes.
 */
export function useRulesEnv(): () => RulesTestEnvironment {
  let env: RulesTestEnvironment | undefined;
  const current = (): RulesTestEnvironment => {
    if (!env) throw new Error("the rules test environment is not initialised");
    return env;
  };
  beforeAll(async () => {
    env = await startRulesEnv();
  });
  beforeEach(async () => {
    await current().clearFirestore();
    await seed(current(), fixture());
  });
  afterAll(async () => {
    await env?.cleanup();
  });
  return current;
}
