/**
 * The operator commands for holds, requests, explanations and brake approvals, run as the real CLI in a child
 * process against the emulators: --json output, exit codes 0/1/2, and the operator acting as the Auth staff
 * user they are (roles and the two-person rule apply, as in the console).
 */
import { Timestamp } from "firebase-admin/firestore";
import { beforeAll, describe, expect, it } from "vitest";
import { evidenceDocId } from "../../../functions/src/evidence/rules";
import { openDeletionRequest, openUserErasure } from "../../../functions/src/requests/index";
import { clearAuth, clearFirestore, db } from "../../helpers/emulator";
import { retention, seedExample, type Run } from "../../helpers/cli";

const json = <T = Record<string, unknown>>(r: Run): T => JSON.parse(r.stdout) as T;

describe("operator commands: holds, requests, explain, approve", () => {
  beforeAll(async () => {
    await clearFirestore();
    await clearAuth();
    expect((await seedExample(["atlasmart"])).code).toBe(0);
  }, 120_000);

  it("each has --help and refuses bad usage with exit 2 before touching anything", async () => {
    const help = await retention(["--help"]);
    for (const c of ["holds", "requests", "explain", "approve"]) expect(help.stdout).toContain(`  ${c} `);
    for (const c of ["holds", "requests", "explain", "approve"]) {
      const r = await retention([c, "--help"]);
      expect(r.code, c).toBe(0);
      expect(r.stdout).toContain("--json");
    }
    for (const args of [
      ["holds"],
      ["holds", "grant"],
      ["holds", "place", "events/e-001"],
      ["holds", "place", "events/e-001", "--reason-code", "lowercase"],
      ["holds", "release", "h-1"],
      ["holds", "list", "--limit", "0"],
      ["holds", "list", "--limit", "101"],
      ["holds", "list", "--note", "x"],
      ["requests"],
      ["requests", "show"],
      ["requests", "list", "--state", "DONE"],
      ["requests", "extend", "r-1"],
      ["requests", "extend", "r-1", "--reason", "x", "--until", "not-a-time"],
      ["explain"],
      ["explain", "events/e-001", "--request", "r-1"],
      ["explain", "not/a/document/path/x"],
      ["approve"],
      ["approve", "abc", "--note", "n"],
      ["approve", "a".repeat(32)],
    ]) {
      const r = await retention([...args, "--json"]);
      expect(r.code, args.join(" ")).toBe(2);
      expect(json<{ ok: boolean; error: { kind: string } }>(r), args.join(" ")).toMatchObject({ ok: false, error: { kind: "USAGE" } });
    }
  });

  it("holds place, list and release: as the Auth staff user, with the two-person rule; --json and tables", async () => {
    const placed = await retention(["holds", "place", "tenants/t-acme/orders/o-1002", "--reason-code", "FINANCE_RETENTION", "--note", "tax year", "--as", "c-2001", "--json"]);
    expect(placed.code, placed.stderr).toBe(0);
    const { holdId } = json<{ holdId: string }>(placed);
    expect((await db().doc("tenants/t-acme/orders/o-1002").get()).get("legalHold")).toBe(true);
    const past = await retention(["holds", "place", "events/e-001", "--reason-code", "FRAUD_INVESTIGATION", "--release-after", new Date(Date.now() - 60_000).toISOString(), "--as", "c-2002", "--json"]);
    expect(past.code, past.stderr).toBe(0);

    const listed = json<{ items: { holdId: string; placedBy: string; pastReleaseAfter: boolean; note: string | null }[]; nextCursor: string | null }>(await retention(["holds", "list", "--json"]));
    expect(listed.items.map((h) => h.holdId)).toContain(holdId);
    expect(listed.items.find((h) => h.holdId === holdId)).toMatchObject({ placedBy: "c-2001", pastReleaseAfter: false, note: "tax year" });
    expect(listed.items.find((h) => h.holdId !== holdId)).toMatchObject({ pastReleaseAfter: true });
    const table = await retention(["holds", "list", "--reason-code", "FRAUD_INVESTIGATION"]);
    expect(table.code).toBe(0);
    expect(table.stdout).toContain("PAST RELEASE-AFTER");
    expect(table.stdout).not.toContain(holdId);
    const paged = json<{ items: unknown[]; nextCursor: string }>(await retention(["holds", "list", "--limit", "1", "--json"]));
    expect(paged.items).toHaveLength(1);
    expect(json<{ items: unknown[] }>(await retention(["holds", "list", "--limit", "1", "--cursor", paged.nextCursor, "--json"])).items).toHaveLength(1);

    const own = await retention(["holds", "release", holdId, "--reason", "done", "--as", "c-2001", "--json"]);
    expect(own.code).toBe(2);
    expect(json(own)).toMatchObject({ ok: false, error: { kind: "TWO_PERSON_RULE" } });
    const notStaff = await retention(["holds", "release", holdId, "--reason", "done", "--as", "r-3001", "--json"]);
    expect(json(notStaff)).toMatchObject({ ok: false, error: { kind: "NOT_COMPLIANCE" } });
    const stranger = await retention(["holds", "release", holdId, "--reason", "done", "--as", "nobody-here"]);
    expect(stranger.code).toBe(2);
    expect(stranger.stderr).toContain("is not a staff user in Firebase Auth");

    const released = await retention(["holds", "release", holdId, "--reason", "year closed", "--as", "c-2002", "--json"]);
    expect(released.code, released.stderr).toBe(0);
    expect(json(released)).toMatchObject({ holdId, state: "RELEASED", released: 1 });
    const history = json<{ items: { holdId: string; releasedBy: string }[] }>(await retention(["holds", "list", "--state", "RELEASED", "--json"]));
    expect(history.items).toEqual([expect.objectContaining({ holdId, releasedBy: "c-2002" })]);
  });

  it("requests list and show: most urgent first, overdue flagged, the staff view of one request", async () => {
    const { request } = await openDeletionRequest({ subject: { type: "user", uid: "u-1001", tenantId: "t-acme" }, source: "user", actor: { type: "user", id: "u-1001" }, nowMs: Date.now() });
    const list = json<{ items: { requestId: string; subject: { type: string; uid?: string }; overdue: boolean }[] }>(await retention(["requests", "list", "--json"]));
    expect(list.items).toEqual([expect.objectContaining({ requestId: request.requestId, subject: { type: "user", uid: "u-1001", tenantId: "t-acme" }, overdue: false })]);
    expect(json<{ items: unknown[] }>(await retention(["requests", "list", "--overdue", "--json"])).items).toEqual([]);
    await db().doc(`deletionRequests/${request.requestId}`).update({ dueAt: Timestamp.fromMillis(Date.now() - 1000) });
    const overdue = await retention(["requests", "list", "--overdue"]);
    expect(overdue.stdout).toContain(request.requestId);
    expect(overdue.stdout).toContain("OVERDUE");

    const shown = await retention(["requests", "show", request.requestId, "--json"]);
    expect(shown.code, shown.stderr).toBe(0);
    const s = json<{ state: string; timeline: { event: string }[]; staff: { subject: { uid?: string } }; retained: { reasonCode: string }[] }>(shown);
    expect(s).toMatchObject({ state: "PENDING", staff: { subject: { type: "user", uid: "u-1001" } }, fullyGoneBy: null, fullyGoneByUnknown: "NOT_ERASED_YET", erasureCompleteAt: null });
    expect(s.timeline.map((e) => e.event)).toContain("REQUESTED");
    expect(s.retained.map((r) => r.reasonCode)).toContain("FINANCE_RETENTION");
    const text = (await retention(["requests", "show", request.requestId])).stdout;
    expect(text).toContain("SOFT_DELETED");
    expect(text).toContain("user u-1001 (tenant t-acme), opened by u-1001");
    expect(text).toMatch(/fully gone by +unknown \(NOT_ERASED_YET\)/);
    const missing = await retention(["requests", "show", "no-such-request", "--json"]);
    expect(missing.code).toBe(2);
    expect(json(missing)).toMatchObject({ ok: false, error: { kind: "REQUEST_NOT_FOUND" } });

    // AtlasMart's registry puts a user on the GDPR's clock unless their directory entry says California: one
    // extension, with a written reason.
    expect(text).toMatch(/legal clock +GDPR Art\. 12\(3\) \(gdpr\): open, \d+ days left/);
    expect(text).toMatch(/extended +-\n/);
    const short = await retention(["requests", "extend", request.requestId, "--reason", "busy", "--as", "c-2001", "--json"]);
    expect(json(short)).toMatchObject({ ok: false, error: { kind: "EXTENSION_REASON_REQUIRED" } });
    const extend = await retention(["requests", "extend", request.requestId, "--reason", "The archive systems are slow to search.", "--as", "c-2001", "--json"]);
    expect(extend.code, extend.stderr).toBe(0);
    expect((await retention(["requests", "show", request.requestId])).stdout).not.toMatch(/extended +-\n/);
    const again = await retention(["requests", "extend", request.requestId, "--reason", "The archive systems are still slow.", "--as", "c-2001", "--json"]);
    expect(again.code).not.toBe(0);
    expect(json(again)).toMatchObject({ ok: false, error: { kind: "ALREADY_EXTENDED" } });
    // A processor notice goes again only once it FAILED (the delivery suite sends one again end to end): a request that
    // notified nobody yet has none, and a resend without its processor or reason is a usage error.
    const resend = await retention(["requests", "resend", request.requestId, "--processor", "search-index", "--reason", "The endpoint is back up.", "--as", "c-2001", "--json"]);
    expect(resend.code).not.toBe(0);
    expect(json(resend)).toMatchObject({ ok: false, error: { kind: "PROCESSOR_NOTICE_NOT_FOUND" } });
    expect((await retention(["requests", "resend", request.requestId, "--reason", "The endpoint is back up."])).code).toBe(2);
    expect((await retention(["requests", "resend", request.requestId, "--processor", "search-index", "--reason", "soon"])).code).toBe(2);
    expect((await retention(["requests", "list"])).stdout).toContain("DAYS LEFT");

    const byRequest = json<{ entries: { action: string }[] }>(await retention(["explain", "--request", request.requestId, "--json"]));
    expect(byRequest.entries.map((e) => e.action)).toEqual(expect.arrayContaining(["DELETION_REQUESTED", "SUBJECT_SOFT_DELETED"]));
  });

  it("requests list by subject (--subject, --scope, --tenant its alias) and show of a request group, in the registry's words", async () => {
    // Ben in two tenants, erased by one request group (as the Auth backstop opens it for a user the path lookup finds in both).
    const opened = await openUserErasure({ uid: "u-1002", scopes: ["t-acme", "t-globex"], source: "auth-backstop", actor: { type: "system", id: "authBackstop" }, nowMs: Date.now() });
    const groupId = opened.request.requestId;
    const other = opened.members[1]!.requestId;
    type Item = { requestId: string; subjectRef: unknown; group: { groupId: string; lead: boolean } | null };
    const mine = json<{ items: Item[] }>(await retention(["requests", "list", "--subject", "u-1002", "--json"]));
    expect(mine.items.map((i) => [i.requestId, i.group]).sort()).toEqual(
      [
        [groupId, { groupId, lead: true }],
        [other, { groupId, lead: false }],
      ].sort(),
    );
    const inGlobex = json<{ items: Item[] }>(await retention(["requests", "list", "--scope", "t-globex", "--json"]));
    expect(inGlobex.items.map((i) => [i.requestId, i.subjectRef])).toEqual([[other, { type: "user", uid: "u-1002", scope: "t-globex" }]]);
    expect(json<{ items: Item[] }>(await retention(["requests", "list", "--tenant", "t-globex", "--json"])).items.map((i) => i.requestId)).toEqual([other]);
    const both = await retention(["requests", "list", "--scope", "t-acme", "--tenant", "t-globex", "--json"]);
    expect(both.code).toBe(2);
    expect(json(both)).toMatchObject({ ok: false, error: { kind: "USAGE" } });
    const withState = await retention(["requests", "list", "--scope", "t-acme", "--state", "PENDING", "--json"]);
    expect(withState.code).toBe(2);

    const shown = json<{ requestId: string; state: string; group: { requests: { scope: string; lead: boolean }[] }; timeline: { scope?: string }[] }>(await retention(["requests", "show", other, "--json"]));
    expect(shown.requestId).toBe(groupId);
    expect(shown.group.requests.map((r) => [r.scope, r.lead])).toEqual([
      ["t-acme", true],
      ["t-globex", false],
    ]);
    expect(new Set(shown.timeline.map((t) => t.scope))).toEqual(new Set(["t-acme", "t-globex"]));
    const text = (await retention(["requests", "show", groupId])).stdout;
    expect(text).toMatch(/group +\S+: 2 tenants/);
    expect(text).toContain("t-globex");
    const table = (await retention(["requests", "list", "--subject", "u-1002"])).stdout;
    expect(table).toContain("GROUP");
    expect(table).toContain(`${groupId} (lead)`);

    const explained = json<{ query: { kind: string }; entries: { requestId: string | null }[] }>(await retention(["explain", "--subject", "u-1002", "--scope", "t-globex", "--json"]));
    expect(explained.entries.length).toBeGreaterThan(0);
    expect(new Set(explained.entries.filter((e) => e.requestId !== null).map((e) => e.requestId))).toEqual(new Set([other]));
    expect((await retention(["explain", "--scope", "t-acme"])).stdout).toContain("tenant t-acme");
  });

  it("approve: a retention-admin decides on a waiting deletion set; others and unknown sets are refused", async () => {
    const runKey = "d".repeat(32);
    await db().doc(`retentionJobs/brake-${runKey}`).set({ runKey, state: "WAITING", units: ["sweep-events"], wouldDelete: 60, decision: null, lastTrippedAt: Timestamp.now() });
    const refused = await retention(["approve", runKey, "--note", "ok", "--as", "c-2001", "--json"]);
    expect(refused.code).toBe(2);
    expect(json(refused)).toMatchObject({ ok: false, error: { kind: "NOT_RETENTION_ADMIN" } });
    const unknown = await retention(["approve", "e".repeat(32), "--note", "ok", "--as", "r-3001", "--json"]);
    expect(json(unknown)).toMatchObject({ ok: false, error: { kind: "BRAKE_RUN_NOT_FOUND" } });
    const approved = await retention(["approve", runKey, "--note", "checked the set", "--as", "r-3001", "--json"]);
    expect(approved.code, approved.stderr).toBe(0);
    const a = json<{ state: string; evidenceShard: string; evidenceSeq: number; expiresAt: string }>(approved);
    expect(a.state).toBe("APPROVED");
    expect((await db().doc(`retentionJobs/brake-${runKey}`).get()).get("decision")).toMatchObject({ decision: "APPROVE", by: "r-3001", note: "checked the set" });
    const entry = (await db().doc(`deletionAudits/${evidenceDocId(a.evidenceShard, a.evidenceSeq)}`).get()).data();
    expect(entry).toMatchObject({ action: "PURGE_BRAKE_DECIDED", actor: { type: "staff", id: "r-3001" } });
    const denied = await retention(["approve", runKey, "--deny", "--note", "second thoughts", "--as", "r-3001"]);
    expect(denied.code).toBe(0);
    expect(denied.stdout).toContain("DENIED");
  });

  it("explain: the evidence for a path with who acted, 0 while it verifies and 1 once an entry is edited", async () => {
    const ok = await retention(["explain", "tenants/t-acme/orders/o-1002", "--json"]);
    expect(ok.code, ok.stderr).toBe(0);
    const r = json<{ entries: { id: string; action: string; actor: { id: string }; paths: string[] }[]; verification: { ok: boolean } }>(ok);
    expect(r.entries.map((e) => [e.action, e.actor.id])).toEqual(expect.arrayContaining([["HOLD_PLACED", "c-2001"], ["HOLD_RELEASED", "c-2002"]]));
    expect(r.verification.ok).toBe(true);
    const table = await retention(["explain", "tenants/t-acme/orders/o-1002", "--verify-chain"]);
    expect(table.code).toBe(0);
    expect(table.stdout).toContain("HOLD_PLACED");
    expect(table.stdout).toContain("OK (chain");
    const placed = r.entries.find((e) => e.action === "HOLD_PLACED")!.id;
    await db().doc(`deletionAudits/${placed}`).update({ "actor.id": "someone-else" });
    const broken = await retention(["explain", "tenants/t-acme/orders/o-1002"]);
    expect(broken.code).toBe(1);
    expect(broken.stdout).toContain(`problem: ${placed} EDITED`);
    const none = await retention(["explain", "tenants/t-acme/orders/o-9999", "--json"]);
    expect(none.code).toBe(0);
    expect(json<{ entries: unknown[] }>(none).entries).toEqual([]);
  });
});
