import { describe, expect, it } from "vitest";
import {
  locatorsIn,
  orphanFinding,
  auditObject,
  auditArchiveEntry,
  auditArchivedDoc,
  auditDeletionRequest,
  auditGovernedDoc,
  CONFIRMED_AFTER_SCAN,
  uidFieldsFor,
  uidLocators,
  uidsAt,
  DEFAULT_THRESHOLDS,
  isArchiveVerified,
  isDeletionCandidate,
  listedFindings,
  isHeld,
  isStuckRetained,
  needsArchiveCheck,
  policyVersionProblem,
  softDeleteAgeBucket,
  staleHoldMarks,
  standsAfterScan,
  type AuditContext,
  type AuditDoc,
  type ArchiveFacts,
} from "../../../functions/src/audit/rules";
import { DAY_MS, PolicyIndex } from "../../../functions/src/kernel/policy";
import { DataMapEntrySchema, type Registry } from "../../../functions/src/kernel/policy-schema";
import { socialRegistry } from "../../../examples/social/registry";
import { retentionFingerprints } from "../../../functions/src/kernel/policy-fingerprint";
import { loadVersion, policyV1, withOrderTracking } from "../../helpers/policy";

const NOW = Date.parse("2027-03-01T00:00:00Z");
const HOUR = 3_600_000;
const ctx = (over: Partial<AuditContext> = {}): AuditContext => ({
  policy: policyV1(),
  publishedVersions: ["v1"],
  activeHolds: [],
  nowMs: NOW,
  thresholds: DEFAULT_THRESHOLDS,
  ...over,
});

/** A healthy document of the class the path's collection gets; overrides inject one fault at a time. */
function doc(path: string, over: Partial<AuditDoc> = {}): AuditDoc {
  const cls = policyV1().classForPath(path)!;
  return {
    path,
    retentionClass: cls.id,
    lifecycleState: "ACTIVE",
    policyVersion: "v1",
    expireAt: cls.mechanism === "ttl" ? NOW + 10 * DAY_MS : null,
    retainUntilMs: cls.durationDays !== null && cls.mechanism !== "ttl" ? NOW + 100 * DAY_MS : null,
    legalHold: false,
    holdIds: [],
    softDeletedAtMs: null,
    claimUnitKey: null,
    deletionRequestId: null,
    hasSoftDeleteMark: false,
    ...over,
  };
}
const codes = (d: AuditDoc, parent: Parameters<typeof auditGovernedDoc>[1] = null, c = ctx()) => auditGovernedDoc(d, parent, c).map((f) => f.code);
const liveParent = { exists: true, expireAtMs: NOW + 10 * DAY_MS };

describe("audit rules for governed documents", () => {
  it("healthy documents of every governed collection have no findings", () => {
    const paths = ["tenants/t", "tenants/t/users/u", "tenants/t/orders/o", "userDirectory/u", "activity/a", "sessions/s", "events/e", "auditRecords/r"];
    for (const p of paths) expect(codes(doc(p)), p).toEqual([]);
    expect(codes(doc("tenants/t/orders/o/messages/m"), liveParent)).toEqual([]);
    expect(codes(doc("sessions/s/tokens/k", { expireAt: NOW + 10 * DAY_MS }), liveParent)).toEqual([]);
  });

  it("UNKNOWN_CLASS: no class, an unknown class, or an ungoverned path", () => {
    expect(codes(doc("events/e", { retentionClass: null }))).toEqual(["UNKNOWN_CLASS"]);
    expect(codes(doc("events/e", { retentionClass: "keep-forever" }))).toEqual(["UNKNOWN_CLASS"]);
    expect(codes(doc("events/e"), null).length).toBe(0);
    expect(codes({ ...doc("events/e"), path: "scratch/x" })).toEqual(["UNKNOWN_CLASS"]);
  });

  it("CLASS_MISMATCH: a known class that is not the one the registry assigns to the path", () => {
    expect(codes(doc("events/e", { retentionClass: "session-30d" }))).toEqual(["CLASS_MISMATCH"]);
  });

  it("INVALID_LIFECYCLE_STATE: missing or outside the state machine", () => {
    expect(codes(doc("activity/a", { lifecycleState: null }))).toEqual(["INVALID_LIFECYCLE_STATE"]);
    expect(codes(doc("activity/a", { lifecycleState: "DELETED" }))).toEqual(["INVALID_LIFECYCLE_STATE"]);
  });

  it("MISSING_TTL: a TTL class without expireAt unless held; an inherited child only while its parent has one", () => {
    expect(codes(doc("sessions/s", { expireAt: null }))).toEqual(["MISSING_TTL"]);
    expect(codes(doc("events/e", { expireAt: null, legalHold: true, lifecycleState: "LEGAL_HOLD", holdIds: ["h1"] }))).toEqual([]);
    expect(codes(doc("events/e", { expireAt: null }), null, ctx({ activeHolds: [{ holdId: "h", targetPath: "events/e", reasonCode: "LITIGATION" }] }))).toEqual([]);
    expect(codes(doc("sessions/s/tokens/k", { expireAt: null }), liveParent)).toEqual(["MISSING_TTL"]);
    expect(codes(doc("sessions/s/tokens/k", { expireAt: null }), { exists: true, expireAtMs: null })).toEqual([]);
    expect(codes(doc("activity/a", { expireAt: null }))).toEqual([]);
  });

  it("INVALID_TTL: not a Timestamp, on a workflow class, or a child outliving its parent", () => {
    expect(codes(doc("sessions/s", { expireAt: "invalid" }))).toEqual(["INVALID_TTL"]);
    expect(codes(doc("tenants/t/orders/o", { expireAt: NOW + DAY_MS }))).toEqual(["INVALID_TTL"]);
    expect(codes(doc("sessions/s/tokens/k", { expireAt: NOW + 20 * DAY_MS }), liveParent)).toEqual(["INVALID_TTL"]);
    expect(codes(doc("sessions/s/tokens/k", { expireAt: NOW + 5 * DAY_MS }), liveParent)).toEqual([]);
  });

  it("HOLD_WITH_TTL: any held document (flag, state, ids or covering record) carrying expireAt", () => {
    const ttl = NOW + DAY_MS;
    expect(codes(doc("events/e", { legalHold: true, expireAt: ttl }))).toEqual(["HOLD_WITH_TTL"]);
    expect(codes(doc("events/e", { lifecycleState: "LEGAL_HOLD", expireAt: ttl }))).toEqual(["HOLD_WITH_TTL"]);
    expect(codes(doc("auditRecords/r", { holdIds: ["h"], expireAt: ttl }))).toEqual(["HOLD_WITH_TTL"]);
    const subtree = ctx({ activeHolds: [{ holdId: "h", targetPath: "tenants/t", reasonCode: "LITIGATION" }] });
    expect(codes(doc("tenants/t/orders/o/messages/m", { expireAt: "invalid" }), liveParent, subtree)).toEqual(["HOLD_WITH_TTL"]);
    expect(isHeld(doc("tenants/t2/users/u"), subtree.activeHolds)).toBe(false);
  });

  it("HOLD_WITH_TTL names the holds that claim the document when records alone hold it, so the audit confirms it after its scan", () => {
    const ttl = NOW + DAY_MS;
    const withTtl = (path: string, over: Partial<AuditDoc> = {}, holds: AuditContext["activeHolds"] = []) =>
      auditGovernedDoc(doc(path, { expireAt: ttl, ...over }), liveParent, ctx({ activeHolds: holds })).filter((f) => f.code === "HOLD_WITH_TTL");
    const onTenant = { holdId: "h-t", targetPath: "tenants/t", reasonCode: "LITIGATION" };
    const onOrder = { holdId: "h-o", targetPath: "tenants/t/orders/o", reasonCode: "LITIGATION" };
    const m = "tenants/t/orders/o/messages/m";
    expect(withTtl(m, {}, [onTenant, onOrder]).map((f) => f.holdIds)).toEqual([["h-o", "h-t"]]);
    // A release that has walked past it has let go of it: it rightly has its value back, unless another hold claims it.
    const passed = { ...onOrder, letGo: { phase: "documents" as const, cursor: `${m}/zzz` } };
    expect(withTtl(m, {}, [passed])).toEqual([]);
    expect(withTtl(m, {}, [passed, onTenant]).map((f) => f.holdIds)).toEqual([["h-t"]]);
    // A release that has not reached it still claims it.
    expect(withTtl(m, {}, [{ ...onOrder, letGo: { phase: "documents" as const, cursor: null } }]).map((f) => f.holdIds)).toEqual([["h-o"]]);
    // Its own marks hold it: a TTL value on it is wrong whatever any record says, so it is reported at once.
    expect(withTtl(m, { holdIds: ["h-t"], legalHold: true, lifecycleState: "LEGAL_HOLD" }, [onTenant]).map((f) => f.holdIds)).toEqual([undefined]);
    const copy = (over: Partial<ArchiveFacts>): ArchiveFacts => ({ path: "archives/a", sourcePath: "tenants/t/orders/o", sha256: "a".repeat(64), verifiedAtMs: NOW, verified: true, legalHold: false, holdIds: [], hasExpireAt: true, ...over });
    expect(auditArchiveEntry(copy({}), [onTenant]).map((f) => [f.code, f.holdIds])).toEqual([["HOLD_WITH_TTL", ["h-t"]]]);
    expect(auditArchiveEntry(copy({}), [{ ...onTenant, letGo: { phase: "documents", cursor: null } }])).toEqual([]);
    expect(auditArchiveEntry(copy({ legalHold: true, holdIds: ["h-t"] }), [onTenant]).map((f) => [f.code, f.holdIds])).toEqual([["HOLD_WITH_TTL", undefined]]);
  });

  it("HOLD_WITH_TTL: a TTL-class document held through an ancestor's document hold", () => {
    const tracking = new PolicyIndex(withOrderTracking());
    const path = "tenants/t/orders/o/tracking/x";
    const d = { ...doc("tenants/t/orders/o"), path, retentionClass: "order-tracking-30d", policyVersion: "v2", expireAt: NOW + DAY_MS, retainUntilMs: null };
    const c = (activeHolds: AuditContext["activeHolds"]) => ctx({ policy: tracking, publishedVersions: ["v1", "v2"], activeHolds });
    expect(codes(d, liveParent, c([]))).toEqual([]);
    expect(codes(d, liveParent, c([{ holdId: "h", targetPath: "tenants/t/orders/o", reasonCode: "LITIGATION" }]))).toEqual(["HOLD_WITH_TTL"]);
    // Held, with the TTL value cleared as a hold's flagging clears it: nothing to report (no MISSING_TTL either).
    expect(codes({ ...d, expireAt: null, legalHold: true, holdIds: ["h"] }, liveParent, c([{ holdId: "h", targetPath: "tenants/t/orders/o", reasonCode: "LITIGATION" }]))).toEqual([]);
  });

  it("TTL_OVERDUE: expired longer ago than the cleanup SLA, and only then", () => {
    expect(codes(doc("sessions/s", { expireAt: NOW - 73 * HOUR }))).toEqual(["TTL_OVERDUE"]);
    expect(codes(doc("sessions/s", { expireAt: NOW - 71 * HOUR }))).toEqual([]);
  });

  it("SOFT_DELETE_QUERY_LEAK: soft-delete marks on a document still visible to reads", () => {
    expect(codes(doc("activity/a", { hasSoftDeleteMark: true, softDeletedAtMs: NOW - DAY_MS }))).toEqual(["SOFT_DELETE_QUERY_LEAK"]);
    expect(codes(doc("activity/a", { hasSoftDeleteMark: true, lifecycleState: "SOFT_DELETED" }))).toEqual([]);
    // Already invisible by expiry: not a leak.
    expect(codes(doc("sessions/s", { hasSoftDeleteMark: true, expireAt: NOW - HOUR }))).toEqual([]);
  });

  it("EXPIRED_BUT_VISIBLE: a workflow document ACTIVE and unheld past its business end plus the workflow lag", () => {
    expect(codes(doc("tenants/t/orders/o", { retainUntilMs: NOW - 49 * HOUR }))).toEqual(["EXPIRED_BUT_VISIBLE"]);
    expect(codes(doc("tenants/t/orders/o", { retainUntilMs: NOW - 47 * HOUR }))).toEqual([]);
    expect(codes(doc("tenants/t/orders/o", { retainUntilMs: NOW - 49 * HOUR, lifecycleState: "PURGE_ELIGIBLE" }))).toEqual([]);
    expect(codes(doc("tenants/t/orders/o", { retainUntilMs: NOW - 49 * HOUR, legalHold: true, lifecycleState: "LEGAL_HOLD" }))).toEqual([]);
  });

  it("ORPHANED_SUBCOLLECTION: a parent that does not exist", () => {
    const f = auditGovernedDoc(doc("tenants/t/orders/o/messages/m"), { exists: false, expireAtMs: null }, ctx());
    expect(f).toEqual([{ path: "tenants/t/orders/o/messages/m", code: "ORPHANED_SUBCOLLECTION", detail: "parent tenants/t/orders/o does not exist" }]);
  });

  it("STALE_POLICY_VERSION: missing, unpublished, or older than current", () => {
    expect(codes(doc("activity/a", { policyVersion: null }))).toEqual(["STALE_POLICY_VERSION"]);
    expect(policyVersionProblem("v2", ["v1"])).toMatch(/not a published/);
    expect(policyVersionProblem("v1", ["v1", "v2"])).toMatch(/current version is v2/);
    expect(policyVersionProblem("v2", ["v1", "v2"])).toBeNull();
    expect(policyVersionProblem("v10", ["v9", "v10"])).toBeNull();
  });

  it("STALE_POLICY_VERSION: not for an older version under which the document's retention is what it is now", () => {
    const v1 = loadVersion("v1");
    const v2 = loadVersion("v2");
    // v2 changed the tenant data map and prose only: no collection's retention changed.
    const fingerprints = new Map([
      ["v1", retentionFingerprints(v1)],
      ["v2", retentionFingerprints(v2)],
    ]);
    expect(fingerprints.get("v2")).toEqual(fingerprints.get("v1"));
    const now = ctx({ policy: new PolicyIndex(v2), publishedVersions: ["v1", "v2"], retentionByVersion: fingerprints });
    for (const path of ["activity/a", "tenants/t/orders/o", "events/e"]) {
      expect(auditGovernedDoc(doc(path, { policyVersion: "v1" }), null, now).map((f) => f.code), path).toEqual([]);
    }
    // A version that changed a class's retention (events kept 120 days instead of 90) leaves that collection's
    // older documents stale, and only them.
    const v3 = { ...v2, version: "v3", classes: v2.classes.map((c) => (c.id === "event-90d" ? { ...c, durationDays: 120 } : c)) };
    const later = ctx({ policy: new PolicyIndex(v3), publishedVersions: ["v1", "v2", "v3"], retentionByVersion: new Map([...fingerprints, ["v3", retentionFingerprints(v3)]]) });
    expect(auditGovernedDoc(doc("events/e", { policyVersion: "v2" }), null, later).map((f) => f.code)).toEqual(["STALE_POLICY_VERSION"]);
    expect(auditGovernedDoc(doc("activity/a", { policyVersion: "v1" }), null, later).map((f) => f.code)).toEqual([]);
    // A change of prose alone keeps the fingerprint.
    const reworded = { ...v2, classes: v2.classes.map((c) => ({ ...c, description: `${c.description} (reworded)`, recovery: "elsewhere" })) };
    expect(retentionFingerprints(reworded)).toEqual(fingerprints.get("v2"));
    // Without fingerprints, every older version is stale, as before.
    expect(auditGovernedDoc(doc("activity/a", { policyVersion: "v1" }), null, ctx({ publishedVersions: ["v1", "v2"] })).map((f) => f.code)).toEqual(["STALE_POLICY_VERSION"]);
  });
});

describe("audit rules for archives, requests and subjects", () => {
  const sha = "a".repeat(64);
  const archive = (over: Partial<ArchiveFacts> = {}): ArchiveFacts => ({
    path: "archives/arc-1",
    sourcePath: "auditRecords/r",
    sha256: sha,
    verifiedAtMs: NOW,
    verified: true,
    legalHold: false,
    holdIds: [],
    hasExpireAt: true,
    ...over,
  });

  it("an archive is verified only with a SHA-256 and a successful read-back", () => {
    expect(isArchiveVerified(archive())).toBe(true);
    expect(isArchiveVerified(archive({ verified: null }))).toBe(true);
    expect(isArchiveVerified(archive({ verifiedAtMs: null }))).toBe(true);
    expect(isArchiveVerified(archive({ verifiedAtMs: null, verified: null }))).toBe(false);
    expect(isArchiveVerified(archive({ verified: false }))).toBe(false);
    expect(isArchiveVerified(archive({ sha256: undefined }))).toBe(false);
    expect(isArchiveVerified(archive({ sha256: "A".repeat(64) }))).toBe(false);
    expect(auditArchiveEntry(archive({ sha256: null }), [])).toEqual([{ path: "archives/arc-1", code: "ARCHIVE_UNVERIFIED", detail: "archive entry has no valid sha256" }]);
  });

  it("a copy of held data carries no TTL either (every copy counts)", () => {
    expect(auditArchiveEntry(archive({ legalHold: true }), []).map((f) => f.code)).toEqual(["HOLD_WITH_TTL"]);
    expect(auditArchiveEntry(archive(), [{ holdId: "h", targetPath: "auditRecords/r", reasonCode: "LITIGATION" }]).map((f) => f.code)).toEqual(["HOLD_WITH_TTL"]);
    expect(auditArchiveEntry(archive({ legalHold: true, hasExpireAt: false }), [])).toEqual([]);
  });

  it("an ARCHIVED archive-class document needs a verified archive", () => {
    expect(needsArchiveCheck({ path: "auditRecords/r", lifecycleState: "ARCHIVED" }, policyV1())).toBe(true);
    expect(needsArchiveCheck({ path: "events/e", lifecycleState: "ARCHIVED" }, policyV1())).toBe(false);
    expect(auditArchivedDoc("auditRecords/r", [])[0]?.detail).toMatch(/no archive entry/);
    expect(auditArchivedDoc("auditRecords/r", [archive({ verified: false })])[0]?.code).toBe("ARCHIVE_UNVERIFIED");
    expect(auditArchivedDoc("auditRecords/r", [archive({ verified: false }), archive()])).toEqual([]);
  });

  it("OVERDUE_REQUEST: unfinished requests past due, BLOCKED included; finished ones never", () => {
    const r = (state: string, dueAtMs: number | null) => auditDeletionRequest({ path: "deletionRequests/r", state, dueAtMs }, NOW).map((f) => f.code);
    expect(r("PENDING", NOW - 1)).toEqual(["OVERDUE_REQUEST"]);
    expect(r("PROCESSING", NOW - DAY_MS)).toEqual(["OVERDUE_REQUEST"]);
    expect(r("BLOCKED", NOW - DAY_MS)).toEqual(["OVERDUE_REQUEST"]);
    expect(r("PENDING", NOW + 1)).toEqual([]);
    expect(r("PURGED", NOW - DAY_MS)).toEqual([]);
    expect(r("CANCELLED", NOW - DAY_MS)).toEqual([]);
    expect(r("PENDING", null)).toEqual([]);
  });

  it("STUCK_RETAINED_UNDER_HOLD: a retained request none of whose remaining paths an active hold covers; overdue only then", () => {
    const holds = [{ holdId: "h-1", targetPath: "tenants/t/orders/o-1", reasonCode: "LITIGATION" }];
    const retained = (paths: string[], count = paths.length) => ({ path: "deletionRequests/r", state: "RETAINED_UNDER_HOLD", dueAtMs: NOW - DAY_MS, retained: { paths, count } });
    const codes = (r: Parameters<typeof auditDeletionRequest>[0], h = holds) => auditDeletionRequest(r, NOW, h).map((f) => f.code);
    // Covered (on the path itself or an ancestor) by a hold that stands: lawfully kept, past due or not.
    expect(codes(retained(["tenants/t/orders/o-1/messages/m-1", "activity/a-1"]))).toEqual([]);
    expect(isStuckRetained(retained(["tenants/t/orders/o-1"]), holds)).toBe(false);
    // No active hold on any of them: stuck, and the erasure it owes is overdue.
    expect(codes(retained(["activity/a-1", "tenants/t/orders/o-2"]))).toEqual(["OVERDUE_REQUEST", "STUCK_RETAINED_UNDER_HOLD"]);
    expect(codes(retained(["tenants/t/orders/o-1"]), [])).toEqual(["OVERDUE_REQUEST", "STUCK_RETAINED_UNDER_HOLD"]);
    expect(codes({ ...retained(["activity/a-1"]), dueAtMs: NOW + DAY_MS })).toEqual(["STUCK_RETAINED_UNDER_HOLD"]);
    // Listing nothing, or no `retainedUnderHold` at all, is stuck too.
    expect(codes({ ...retained([]), retained: null })).toEqual(["OVERDUE_REQUEST", "STUCK_RETAINED_UNDER_HOLD"]);
    const [stuck] = auditDeletionRequest({ ...retained(["activity/a-1"], 140), dueAtMs: null }, NOW, holds);
    expect(stuck).toMatchObject({ code: "STUCK_RETAINED_UNDER_HOLD", detail: expect.stringMatching(/140 remaining path\(s\) \(the 1 listed\)/) as unknown });
    // Other states are never stuck.
    expect(isStuckRetained({ path: "deletionRequests/r", state: "PURGED", dueAtMs: null, retained: null }, [])).toBe(false);
  });

  it("ORPHANED_SUBJECT: one finding per record, naming the uid an officer looks the request up by", () => {
    expect(orphanFinding("u-9", "chats/c-1")).toEqual({ path: "chats/c-1", code: "ORPHANED_SUBJECT", detail: expect.stringMatching(/^data of uid u-9, which has no Auth account/) as unknown });
  });
});

describe("where a user's uid is (ORPHANED_SUBJECT's reach)", () => {
  let n = 0;
  const entry = (e: Record<string, unknown>) => DataMapEntrySchema.parse({ id: `e-${n++}`, ...(e.action === "delete" ? {} : { reason: "why", reasonCode: "WHY" }), ...e });
  const fields = (data: Record<string, unknown>) => (f: string) => data[f];
  const none = fields({});
  const uids = (path: string, get: (f: string) => unknown, ls: ReturnType<typeof uidLocators>, keptByClass = false) => uidsAt(path, get, ls, keptByClass, "tenantId").map((u) => u.uid);

  it("a uid-keyed path, with the scope the path names beside it", () => {
    const ls = uidLocators([entry({ kind: "doc", path: "people/{uid}", action: "delete" }), entry({ kind: "doc", path: "tenants/{tenantId}/users/{uid}", action: "delete", recursive: true })]);
    expect(uidsAt("people/u-1", none, ls, false, "tenantId")).toEqual([{ uid: "u-1", scopeId: null }]);
    expect(uidsAt("tenants/t-1/users/u-2", none, ls, false, "tenantId")).toEqual([{ uid: "u-2", scopeId: "t-1" }]);
    // What lies under the profile is the profile's: the profile itself is the finding.
    expect(uids("tenants/t-1/users/u-2/notes/n", none, ls)).toEqual([]);
    expect(uids("teams/u-1", none, ls)).toEqual([]);
    // No uid Auth would refuse: over 128 characters.
    expect(uids(`people/${"x".repeat(129)}`, none, ls)).toEqual([]);
  });

  it("a field a query entry filters on, with its fixed clauses checked", () => {
    const ls = uidLocators([
      entry({ kind: "query", collection: "activity", where: [["subjectUid", "==", "{uid}"], ["kind", "==", "login"]], action: "delete" }),
      entry({ kind: "collectionGroup", collectionId: "comments", where: [["authorId", "==", "{uid}"]], action: "archive" }),
    ]);
    expect(uids("activity/a", fields({ subjectUid: "u-1", kind: "login" }), ls)).toEqual(["u-1"]);
    expect(uids("activity/a", fields({ subjectUid: "u-1", kind: "purchase" }), ls)).toEqual([]);
    expect(uids("activity/a", fields({ subjectUid: 7, kind: "login" }), ls)).toEqual([]);
    // Nothing Auth would refuse: an empty uid, or one over 128 characters.
    expect(uids("activity/a", fields({ subjectUid: "", kind: "login" }), ls)).toEqual([]);
    expect(uids("activity/a", fields({ subjectUid: "x".repeat(129), kind: "login" }), ls)).toEqual([]);
    expect(uids("activity/a", fields({ subjectUid: "x".repeat(128), kind: "login" }), ls)).toEqual(["x".repeat(128)]);
    expect(uids("posts/p/comments/c", fields({ authorId: "u-2" }), ls)).toEqual(["u-2"]);
    // A query's collection is that collection only, not the same id under a parent.
    expect(uids("teams/t/activity/a", fields({ subjectUid: "u-1", kind: "login" }), ls)).toEqual([]);
    expect(uidFieldsFor("activity", ls)).toEqual(["kind", "subjectUid"]);
    expect(uidFieldsFor("comments", ls)).toEqual(["authorId"]);
    expect(uidFieldsFor("posts", ls)).toEqual([]);
  });

  it("not an erasing entry that also names another variable: a record there may be someone's who is no subject (a support agent's reply)", () => {
    const erasing = uidLocators([
      entry({ kind: "collectionGroup", collectionId: "messages", where: [["tenantId", "==", "{tenantId}"], ["authorId", "==", "{uid}"]], action: "delete" }),
      entry({ kind: "query", collection: "tenants/{tenantId}/orders", where: [["customerId", "==", "{uid}"]], action: "delete" }),
    ]);
    expect(erasing).toEqual([]);
    // A keeping one stays, whatever the variable's value: it keeps what another entry would erase.
    const ls = uidLocators([
      entry({ kind: "collectionGroup", collectionId: "messages", where: [["authorId", "==", "{uid}"]], action: "delete" }),
      entry({ kind: "collectionGroup", collectionId: "messages", where: [["tenantId", "==", "{tenantId}"], ["authorId", "==", "{uid}"]], action: "retain" }),
      entry({ kind: "query", collection: "orgs/{orgId}/notes", where: [["authorId", "==", "{uid}"]], action: "retain" }),
      entry({ kind: "collectionGroup", collectionId: "notes", where: [["authorId", "==", "{uid}"]], action: "delete" }),
    ]);
    expect(uids("threads/t/messages/m", fields({ tenantId: "t-9", authorId: "u-1" }), ls)).toEqual([]);
    expect(uids("orgs/o-1/notes/n", fields({ authorId: "u-1" }), ls)).toEqual([]);
    expect(uids("teams/x/notes/n", fields({ authorId: "u-1" }), ls)).toEqual(["u-1"]);
    expect(uidFieldsFor("messages", ls)).toEqual(["authorId"]);
  });

  it("an array that holds uids: every member is one", () => {
    const ls = uidLocators([entry({ kind: "query", collection: "chats", where: [["memberIds", "array-contains", "{uid}"]], action: "removeFromArray", arrayField: "memberIds" })]);
    expect(uids("chats/c", fields({ memberIds: ["u-1", "u-2", 3, "u-1"] }), ls)).toEqual(["u-1", "u-2"]);
    expect(uids("chats/c", fields({ memberIds: "u-1" }), ls)).toEqual([]);
  });

  it("only where erasure takes the uid away: never a retained record, a masked one that keeps the uid, or one its class keeps", () => {
    const keeping = [
      entry({ kind: "query", collection: "auditRecords", where: [["actorUid", "==", "{uid}"]], action: "retain" }),
      entry({ kind: "query", collection: "reviews", where: [["authorId", "==", "{uid}"]], action: "mask", maskFields: ["authorName"] }),
      entry({ kind: "doc", path: "ledgers/{uid}", action: "retain" }),
      entry({ kind: "doc", path: "cards/{uid}", action: "mask", maskFields: ["pan"] }),
    ];
    // Alone, keeping locators are left out: they only take back what an erasing one finds.
    expect(uidLocators(keeping)).toEqual([]);
    const ls = uidLocators([
      ...keeping,
      entry({ kind: "query", collection: "auditRecords", where: [["actorUid", "==", "{uid}"]], action: "delete" }),
      entry({ kind: "query", collection: "reviews", where: [["authorId", "==", "{uid}"]], action: "delete" }),
      entry({ kind: "doc", path: "ledgers/{uid}", action: "delete" }),
      entry({ kind: "doc", path: "cards/{uid}", action: "delete" }),
    ]);
    expect(uids("auditRecords/r", fields({ actorUid: "u-1" }), ls)).toEqual([]);
    expect(uids("reviews/r", fields({ authorId: "u-1" }), ls)).toEqual([]);
    expect(uids("ledgers/u-1", none, ls)).toEqual([]);
    expect(uids("cards/u-1", none, ls)).toEqual([]);
    // A mask that takes the uid field out erases it.
    const masked = uidLocators([entry({ kind: "query", collection: "reviews", where: [["authorId", "==", "{uid}"]], action: "mask", maskFields: ["authorId", "authorName"] })]);
    expect(uids("reviews/r", fields({ authorId: "u-1" }), masked)).toEqual(["u-1"]);
    // Two entries reach one record: the one that keeps it decides, as in the purge.
    const both = uidLocators([...keeping, entry({ kind: "query", collection: "auditRecords", where: [["actorUid", "==", "{uid}"]], action: "delete" })]);
    expect(uids("auditRecords/r", fields({ actorUid: "u-1" }), both)).toEqual([]);
    // A class that is not user-deletable keeps a delete entry's record while its retention runs; an archived one goes.
    const del = uidLocators([entry({ kind: "query", collection: "invoices", where: [["payerId", "==", "{uid}"]], action: "delete" })]);
    expect(uids("invoices/i", fields({ payerId: "u-1" }), del, true)).toEqual([]);
    const arc = uidLocators([entry({ kind: "query", collection: "invoices", where: [["payerId", "==", "{uid}"]], action: "archive", reason: "tax", reasonCode: "TAX" })]);
    expect(uids("invoices/i", fields({ payerId: "u-1" }), arc, true)).toEqual(["u-1"]);
    // An archive takes what no keeping entry keeps, so the class does not keep it; nor does a mask that takes the uid.
    expect(uids("invoices/i", fields({ payerId: "u-1" }), [...del, ...arc], true)).toEqual(["u-1"]);
    const maskUid = uidLocators([entry({ kind: "query", collection: "invoices", where: [["payerId", "==", "{uid}"]], action: "mask", maskFields: ["payerId"] })]);
    expect(uids("invoices/i", fields({ payerId: "u-1" }), [...del, ...maskUid], true)).toEqual(["u-1"]);
    // Of the entries that keep the live record, the first in the data map's order decides, as the purge plans them.
    const maskUidEntry = entry({ kind: "query", collection: "invoices", where: [["payerId", "==", "{uid}"]], action: "mask", maskFields: ["payerId"] });
    const maskMemo = entry({ kind: "query", collection: "invoices", where: [["payerId", "==", "{uid}"]], action: "mask", maskFields: ["memo"] });
    const retainIt = entry({ kind: "query", collection: "invoices", where: [["payerId", "==", "{uid}"]], action: "retain" });
    const decide = (...es: ReturnType<typeof entry>[]) => uids("invoices/i", fields({ payerId: "u-1" }), uidLocators(es));
    expect(decide(maskUidEntry, maskMemo)).toEqual(["u-1"]);
    expect(decide(maskMemo, maskUidEntry)).toEqual([]);
    expect(decide(maskUidEntry, retainIt)).toEqual(["u-1"]);
    expect(decide(retainIt, maskUidEntry)).toEqual([]);
  });

  it("every shipped policy locates the user's records its erasure takes away", () => {
    const named = (r: Registry) => uidLocators(r.dataMap.user).filter((l) => l.erases).map((l) => (l.kind === "path" ? l.pattern : `${l.collectionId}.${l.field}`)).sort();
    expect(named(loadVersion("v7"))).toEqual(["activity.subjectUid", "sessions.uid", "tenants/{tenantId}/users/{uid}", "userDirectory/{uid}"]);
    expect(named(socialRegistry())).toEqual(["chats.memberIds", "comments.authorId", "events.uid", "following.followeeId", "messages.senderId", "notifications.recipientId", "posts.authorId", "users/{uid}"]);
  });

  it("a collection's locators are those whose records lie in it: the others' records cost the check nothing", () => {
    const ls = uidLocators(loadVersion("v7").dataMap.user);
    const at = (collectionId: string) => locatorsIn(collectionId, ls).map((l) => (l.kind === "path" ? l.pattern : `${l.collectionId}.${l.field}`));
    expect(at("users")).toEqual(["tenants/{tenantId}/users/{uid}"]);
    expect(at("userDirectory")).toEqual(["userDirectory/{uid}"]);
    expect(at("activity")).toContain("activity.subjectUid");
    expect(at("orders")).toEqual([]);
    expect(at("tenants")).toEqual([]);
    // Every locator lies in exactly one collection.
    const ids = [...new Set(ls.map((l) => (l.kind === "path" ? l.pattern.split("/").at(-2)! : l.collectionId)))];
    expect(ids.flatMap(at).length).toBe(ls.length);
  });
});

describe("audit statistics helpers", () => {
  it("buckets soft-delete ages", () => {
    expect([0, 23 * HOUR, DAY_MS, 6.9 * DAY_MS, 7 * DAY_MS, 45 * DAY_MS, 90 * DAY_MS, 400 * DAY_MS].map(softDeleteAgeBucket)).toEqual([
      "<1d",
      "<1d",
      "1-7d",
      "1-7d",
      "7-30d",
      "30-90d",
      ">90d",
      ">90d",
    ]);
  });

  it("a deletion candidate is unheld and soft-deleted, purge-eligible or past its retention", () => {
    expect(isDeletionCandidate(doc("activity/a", { lifecycleState: "SOFT_DELETED" }), false, NOW)).toBe(true);
    expect(isDeletionCandidate(doc("activity/a", { lifecycleState: "SOFT_DELETED" }), true, NOW)).toBe(false);
    expect(isDeletionCandidate(doc("sessions/s", { expireAt: NOW - 1 }), false, NOW)).toBe(true);
    expect(isDeletionCandidate(doc("tenants/t/orders/o", { lifecycleState: "PURGE_ELIGIBLE" }), false, NOW)).toBe(true);
    expect(isDeletionCandidate(doc("sessions/s"), false, NOW)).toBe(false);
  });
});

describe("the audit's object rule", () => {
  const holds = [
    { holdId: "h-user", targetPath: "users/u-1", reasonCode: "LITIGATION" },
    { holdId: "h-flagging", targetPath: "users/u-2", reasonCode: "LITIGATION" },
    { holdId: "h-releasing", targetPath: "users/u-3", reasonCode: "LITIGATION", letGo: { phase: "documents" as const, cursor: null } },
  ];
  const applied = new Set(["h-user", "h-releasing"]);
  const o = (heldWith: string, markers: string[] = []) => ({ path: `gs://b/${heldWith}/a.jpg`, markerHoldIds: markers, heldWith: [heldWith] });

  it("an object an applied hold covers carries its marker; without it, OBJECT_HELD_UNMARKED", () => {
    expect(auditObject(o("users/u-1", ["h-user"]), holds, applied)).toEqual([]);
    expect(auditObject(o("users/u-1"), holds, applied).map((f) => f.code)).toEqual(["OBJECT_HELD_UNMARKED"]);
    // A hold whose walk has not finished, or that is being released, is not expected to have marked it yet.
    expect(auditObject(o("users/u-2"), holds, applied)).toEqual([]);
    expect(auditObject(o("users/u-3"), holds, applied)).toEqual([]);
  });

  it("a marker of a hold that is not active is OBJECT_MARKER_STALE, naming the hold for the confirmation after the scan", () => {
    expect(auditObject(o("users/u-9", ["h-gone"]), holds, applied).map((f) => [f.code, f.holdIds, f.detail])).toEqual([["OBJECT_MARKER_STALE", ["h-gone"], "carries the marker of hold h-gone, which is not active"]]);
    expect(CONFIRMED_AFTER_SCAN.has("OBJECT_MARKER_STALE")).toBe(true);
  });
});

describe("the audit's hold-mark rule for documents and archive copies", () => {
  const active = new Set(["h-live", "h-releasing"]);

  it("HOLD_MARK_STALE for each id of a hold that is not active, once per id, naming it", () => {
    expect(staleHoldMarks("events/e", ["h-live", "h-gone", "h-gone", "h-released"], active)).toEqual([
      { path: "events/e", code: "HOLD_MARK_STALE", holdIds: ["h-gone"], detail: "carries the id of hold h-gone, which is not active: kept from every purge for no hold" },
      { path: "events/e", code: "HOLD_MARK_STALE", holdIds: ["h-released"], detail: "carries the id of hold h-released, which is not active: kept from every purge for no hold" },
    ]);
    expect(CONFIRMED_AFTER_SCAN.has("HOLD_MARK_STALE")).toBe(true);
  });

  it("nothing for ids of active holds (a release in progress included) or for no ids", () => {
    expect(staleHoldMarks("events/e", ["h-live", "h-releasing"], active)).toEqual([]);
    expect(staleHoldMarks("events/e", [], active)).toEqual([]);
  });

  it("a stale mark stands after the scan while its hold is not active, unless the hold was placed while the scan ran", () => {
    const started = NOW;
    const before = NOW - DAY_MS;
    const record = (state: string, placedAtMs: number | null = before) => ({ state, letGo: null, placedAtMs });
    for (const code of ["HOLD_MARK_STALE", "OBJECT_MARKER_STALE"] as const) {
      expect(standsAfterScan(code, "events/e", "document", [null], started), code).toBe(true);
      expect(standsAfterScan(code, "events/e", "document", [record("RELEASED")], started), code).toBe(true);
      expect(standsAfterScan(code, "events/e", "document", [record("ACTIVE")], started), code).toBe(false);
      expect(standsAfterScan(code, "events/e", "document", [{ ...record("ACTIVE"), letGo: { phase: "documents", cursor: null } }], started), code).toBe(false);
      // Placed and released while the audit ran (or just before it read the holds): its id was rightly there.
      expect(standsAfterScan(code, "events/e", "document", [record("RELEASED", started + 1_000)], started), code).toBe(false);
      expect(standsAfterScan(code, "events/e", "document", [record("RELEASED", started - 30_000)], started), code).toBe(false);
      expect(standsAfterScan(code, "events/e", "document", [record("RELEASED", started - 120_000)], started), code).toBe(true);
    }
  });

  it("a finding about what holds cover stands while one of its holds is active and still claims it", () => {
    const active = { state: "ACTIVE", letGo: null, placedAtMs: NOW };
    const released = { state: "RELEASED", letGo: null, placedAtMs: NOW };
    const releasingAt = (cursor: string | null) => ({ state: "ACTIVE", letGo: { phase: "documents" as const, cursor }, placedAtMs: NOW });
    const atCopies = { state: "ACTIVE", letGo: { phase: "archives" as const, cursor: null }, placedAtMs: NOW };
    const doc = "tenants/t/orders/o/tracking/tr-2";
    const stands = (kind: "document" | "copy" | "object", named: Parameters<typeof standsAfterScan>[3], path: string | null = doc) => standsAfterScan("HOLD_WITH_TTL", path, kind, named, NOW);
    expect(stands("document", [active])).toBe(true);
    expect(stands("document", [released])).toBe(false);
    expect(stands("document", [null])).toBe(false);
    // A release that has not reached the document yet still claims it: a stalled release does not hide its TTL value.
    expect(stands("document", [releasingAt(null)])).toBe(true);
    expect(stands("document", [releasingAt("tenants/t/orders/o/tracking/tr-1")])).toBe(true);
    expect(stands("document", [releasingAt(doc)])).toBe(false);
    expect(stands("document", [atCopies])).toBe(false);
    // Another hold that claims it keeps the finding standing.
    expect(stands("document", [atCopies, active])).toBe(true);
    // A copy or an object is let go as soon as a release begins.
    expect(stands("copy", [releasingAt(null)], "archives/a")).toBe(false);
    expect(stands("copy", [active], "archives/a")).toBe(true);
    expect(standsAfterScan("OBJECT_HELD_UNMARKED", "gs://b/x", "object", [releasingAt(null)], NOW)).toBe(false);
    expect(standsAfterScan("OBJECT_HELD_UNMARKED", "gs://b/x", "object", [active], NOW)).toBe(true);
    // Counted beyond those kept (no path): stands while one of its holds is active.
    expect(stands("document", [releasingAt(doc)], null)).toBe(true);
    expect(stands("document", [released], null)).toBe(false);
    for (const code of ["HOLD_MARK_STALE", "OBJECT_MARKER_STALE", "HOLD_WITH_TTL", "OBJECT_HELD_UNMARKED"] as const) expect(CONFIRMED_AFTER_SCAN.has(code), code).toBe(true);
    expect(CONFIRMED_AFTER_SCAN.has("MISSING_TTL")).toBe(false);
  });

  it("the document is still held by the stale id: the finding reports it, the hold rule does not change", () => {
    expect(isHeld({ path: "events/e", legalHold: false, lifecycleState: "ACTIVE", holdIds: ["h-gone"] }, [])).toBe(true);
  });
});

describe("the findings a report page lists", () => {
  const f = (code: string, n: number) => ({ code, path: `${code.toLowerCase()}/${String(n).padStart(3, "0")}` });
  it("keeps the first of every code, then fills up to the page's size in the list's order", () => {
    // A flood of one code sorted first, then two rare ones.
    const all = [...Array.from({ length: 30 }, (_, i) => f("FLOOD", i)), f("RARE", 0), f("RARER", 0)];
    const listed = listedFindings(all, 10, 3);
    expect(listed.map((x) => x.path)).toEqual(["flood/000", "flood/001", "flood/002", "flood/003", "flood/004", "flood/005", "flood/006", "flood/007", "rare/000", "rarer/000"]);
  });
  it("lists everything when the list is short, and the samples alone when they are more than the page", () => {
    const few = [f("A", 0), f("B", 0)];
    expect(listedFindings(few, 10, 3)).toEqual(few);
    const many = ["A", "B", "C", "D"].flatMap((c) => [f(c, 0), f(c, 1)]);
    expect(listedFindings(many, 3, 1).map((x) => x.path)).toEqual(["a/000", "b/000", "c/000", "d/000"]);
  });
});
