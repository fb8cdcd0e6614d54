/** Helpers of the evidence suites. */
import { INCIDENT_SHARD_KEY, SEAL_SHARD_KEY } from "../../../functions/src/evidence/anchor";
import type { EvidenceBody } from "../../../functions/src/evidence/rules";
import { shardOfKey } from "../../../functions/src/evidence/store";
import { localAnchors } from "../../../functions/src/platform/anchors";

/** The i-th entry a suite appends about `subject`: a TTL delete at a fixed time, so entries differ only by i. */
export const ttlEntry = (subject: string, i: number): EvidenceBody => ({
  action: "TTL_DELETE",
  actor: { type: "system", id: "ttlDeleted-sessions" },
  decision: { reason: "SWEEPER" },
  policyVersion: "v1",
  atMs: 1_800_000_000_000 + i,
  paths: [`${subject}/${i}`],
});

/** `n` subjects named `sessions/<prefix>-i`, each in a chain of its own, none of them the anchor job's chains. */
export function subjectsApart(prefix: string, n: number): string[] {
  const picked: string[] = [SEAL_SHARD_KEY, INCIDENT_SHARD_KEY];
  for (let i = 0; picked.length < n + 2; i++) {
    const k = `sessions/${prefix}-${i}`;
    if (!picked.some((p) => shardOfKey(p) === shardOfKey(k))) picked.push(k);
  }
  return picked.slice(2);
}

/** A verification's findings as `PROBLEM@shard:seq`, sorted. */
export const sortedFindings = (r: { findings: { problem: string; shard: string; seq: number }[] }): string[] =>
  r.findings.map((f) => `${f.problem}@${f.shard}:${f.seq}`).sort();

/**
 * Deletes the per-append head records from the emulators' anchors store, keeping the periodic anchors: what the
 * anchor store holds when every head record's write failed, so a test sees what the periodic anchor alone catches.
 */
export async function dropHeadRecords(databaseId = "(default)"): Promise<number> {
  const snap = await localAnchors(databaseId).where("event", "==", "retention.evidence.head").get();
  await Promise.all(snap.docs.map((d) => d.ref.delete()));
  return snap.size;
}
