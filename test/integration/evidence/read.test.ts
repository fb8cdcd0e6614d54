/**
 * Checking entries where they sit, without walking their chains (what a caller that holds a few entries, such as
 * the brake's approval binding or a page of an explanation, can afford): hash, MAC, the link back, and the entry
 * after it (or the head) linking forward.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { readEntry, verifyEntries } from "../../../functions/src/evidence/read";
import { entryDocId, type ChainedEvidence, type EvidenceBody } from "../../../functions/src/evidence/rules";
import { entryRef, recordEvidence, shardOfKey } from "../../../functions/src/evidence/store";
import { clearFirestore } from "../../helpers/emulator";

const SUBJECT = "events/read-subject";
const body = (i: number): EvidenceBody => ({ action: "TTL_DELETE", actor: { type: "system", id: "ttlDeleted-events" }, decision: { reason: "SWEEPER" }, policyVersion: "v1", atMs: 1_800_000_000_000 + i, paths: [`${SUBJECT}/${i}`] });
const problems = (m: Map<string, { problem: string }[]>) => Object.fromEntries([...m].map(([id, fs]) => [id, fs.map((f) => f.problem)]));

describe("verifying single entries where they sit", () => {
  let entries: ChainedEvidence[];
  const shard = () => shardOfKey(SUBJECT);
  beforeEach(async () => {
    await clearFirestore();
    entries = await recordEvidence(SUBJECT, body(1), body(2), body(3));
  });

  it("intact entries, read back one by one, have no problems", async () => {
    const read = await Promise.all([1, 2, 3].map((seq) => readEntry(shard(), seq)));
    expect(read).toEqual(entries);
    expect(problems(await verifyEntries(read as ChainedEvidence[]))).toEqual(Object.fromEntries(entries.map((e) => [entryDocId(e), []])));
    expect(await readEntry(shard(), 4)).toBeNull();
  });

  it("an edited entry fails its hash; one re-hashed without the key fails its MAC and its neighbour's link", async () => {
    await entryRef(shard(), 2).update({ atMs: 42 });
    expect(problems(await verifyEntries([(await readEntry(shard(), 2))!]))).toEqual({ [entryDocId(entries[1]!)]: ["EDITED"] });
    const forged = { ...entries[1]!, mac: "0".repeat(64) };
    await entryRef(shard(), 2).set(forged);
    expect(problems(await verifyEntries([forged]))).toEqual({ [entryDocId(forged)]: ["BAD_MAC"] });
  });

  it("an entry whose successor is gone, and which is not the head, is no longer in its chain", async () => {
    await entryRef(shard(), 3).delete();
    expect(problems(await verifyEntries([entries[1]!]))).toEqual({ [entryDocId(entries[1]!)]: ["BROKEN_LINK"] });
    await entryRef(shard(), 1).delete();
    expect(problems(await verifyEntries([entries[1]!]))).toEqual({ [entryDocId(entries[1]!)]: ["BROKEN_LINK", "BROKEN_LINK"] });
  });
});
