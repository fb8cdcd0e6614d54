import { beforeAll, describe, expect, it } from "vitest";
import { headRef } from "../../../../functions/src/evidence/store";
import { chainHash, shardOf } from "../../../../functions/src/evidence/rules";
import { db } from "../../../helpers/emulator";
import { callExpect, freshDemo, readChain, verifyStoredChain, type Tokens } from "./support";

/** Tampering with the stored evidence is detected: every entry, edited or deleted, breaks verification. */
describe("the evidence chain over a run of the callables", () => {
  let t: Tokens;
  beforeAll(async () => {
    t = await freshDemo();
    const { requestId } = await callExpect<{ requestId: string }>("requestAccountDeletion", { reason: "bye" }, t.ada);
    const { holdId } = await callExpect<{ holdId: string }>("placeRetentionHold", { targetPath: "tenants/t-acme/orders/o-1002", reasonCode: "LITIGATION" }, t.clara);
    await callExpect("planDeletion", { subjectUid: "u-1001" }, t.clara);
    await callExpect("transitionLifecycle", { path: "events/e-001", to: "SOFT_DELETED", reason: "r" }, t.rita);
    await callExpect("releaseRetentionHold", { holdId, reason: "done" }, t.dev);
    await callExpect("cancelAccountDeletion", { requestId }, t.ada);
  });

  it("verifies as stored, and covers every kind of action", async () => {
    const result = await verifyStoredChain();
    expect(result).toMatchObject({ ok: true, findings: [] });
    const actions = new Set((await readChain()).entries.map((e) => e.entry.action));
    for (const a of ["DELETION_REQUESTED", "SUBJECT_SOFT_DELETED", "HOLD_PLACED", "PLAN_PREVIEWED", "LIFECYCLE_TRANSITION", "HOLD_RELEASED", "DELETION_CANCELLED", "SOFT_DELETE_RESTORED"]) {
      expect(actions, a).toContain(a);
    }
  });

  it("editing any entry breaks it, and restoring the entry mends it", async () => {
    const { entries } = await readChain();
    expect(entries.length).toBeGreaterThanOrEqual(8);
    for (const { docId, entry } of entries) {
      const ref = db().collection("deletionAudits").doc(docId);
      await ref.update({ "decision.reason": `${entry.decision.reason}-EDITED` });
      const broken = await verifyStoredChain();
      expect(broken.ok, docId).toBe(false);
      expect(broken.findings.map((f) => f.problem), docId).toContain("EDITED");
      await ref.set(entry);
      expect((await verifyStoredChain()).ok, docId).toBe(true);
    }
  });

  it("deleting any entry breaks it (the last one too, through the head)", async () => {
    const { entries } = await readChain();
    for (const { docId, entry } of entries) {
      const ref = db().collection("deletionAudits").doc(docId);
      await ref.delete();
      const broken = await verifyStoredChain();
      expect(broken.ok, docId).toBe(false);
      expect(broken.findings.map((f) => f.problem), docId).toContain("REMOVED");
      await ref.set(entry);
      expect((await verifyStoredChain()).ok, docId).toBe(true);
    }
  });

  it("moving a head, or rewriting an entry with a fresh hash (without the key), is detected", async () => {
    const { entries, heads } = await readChain();
    const [shard, head] = [...heads][0]!;
    await headRef(shard).set({ seq: head.seq, hash: "f".repeat(64) });
    expect((await verifyStoredChain()).findings.map((f) => f.problem)).toContain("HEAD_MISMATCH");
    await headRef(shard).set(head);
    // Recomputing an edited entry's own hash does not help: its MAC needs the evidence key.
    const victim = entries[1]!;
    const { seq, prevHash, hash: _old, mac, keyId, ...body } = victim.entry;
    const forged = { ...body, counts: { ...(body.counts ?? {}), forged: 1 } };
    await db().collection("deletionAudits").doc(victim.docId).set({ ...forged, seq, prevHash, hash: chainHash(prevHash, seq, forged), mac, keyId });
    const r = await verifyStoredChain();
    expect(r.findings).toContainEqual(expect.objectContaining({ problem: "BAD_MAC", shard: shardOf(victim.entry), docId: victim.docId }));
    await db().collection("deletionAudits").doc(victim.docId).set(victim.entry);
    expect((await verifyStoredChain()).ok).toBe(true);
  });
});
