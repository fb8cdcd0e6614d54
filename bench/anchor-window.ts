/**
 * `npm run bench:anchor-window`: the window the per-append head records leave, measured on the emulators.
 *
 * A truncation goes unnoticed only for as long as the anchor store does not yet hold the head it cut. This
 * measures that time for every append: from the entry's commit (its document's server create time) to the head
 * record being readable in the anchor store (the emulators' anchors database: the record document's create
 * time, on the same emulator clock). It also measures what the record costs an append: the same append
 * transaction with and without the record, and what the deployed form of the record (one structured log line)
 * costs on this machine. Sequential appends, then 16 concurrent writers on 16 chains.
 *
 *   node scripts/emulators.mjs exec --only firestore,auth -- tsx bench/anchor-window.ts [appends]
 *
 * Prints a summary and one JSON line.
 */
import { Writable } from "node:stream";
import { FieldPath, type Timestamp } from "firebase-admin/firestore";
import { signingKey } from "../functions/src/evidence/keys";
import { chainEntry, evidenceDocId, HEAD_EVENT, makeHeadRecord, type ChainHead, type EvidenceBody } from "../functions/src/evidence/rules";
import { EVIDENCE_TX, headRef, recordEvidence, shardOfKey } from "../functions/src/evidence/store";
import { localAnchors, writeAnchorLine } from "../functions/src/platform/anchors";
import { COLLECTIONS, db } from "../functions/src/platform/firestore";

const appends = Number(process.argv[2] ?? 200);
const body = (i: number): EvidenceBody => ({ action: "BENCH_APPEND", actor: { type: "system", id: "bench" }, decision: { reason: "BENCH" }, policyVersion: "v1", atMs: Date.now(), paths: [`bench/${i}`] });

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const stats = (xs: number[]) => ({ n: xs.length, p50: round(pct(xs, 50)), p95: round(pct(xs, 95)), p99: round(pct(xs, 99)), max: round(Math.max(...xs)) });
const round = (x: number) => Math.round(x * 100) / 100;
const ms = (t: Timestamp) => t.seconds * 1000 + t.nanoseconds / 1e6;

/** The append transaction exactly as openEvidence builds it, without the after-commit head record. */
async function appendWithoutRecord(subject: string, b: EvidenceBody): Promise<void> {
  const key = signingKey();
  const shard = shardOfKey(subject);
  await db().runTransaction(async (tx) => {
    const snap = await tx.get(headRef(shard));
    const head = snap.exists ? (snap.data() as ChainHead) : null;
    const entry = chainEntry(shard, head, b, key);
    tx.create(db().collection(COLLECTIONS.deletionAudits).doc(evidenceDocId(shard, entry.seq)), entry);
    tx.set(headRef(shard), { seq: entry.seq, hash: entry.hash });
  }, EVIDENCE_TX);
}

async function timed(run: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await run();
  return performance.now() - t;
}

/** Commit-to-readable for every entry of the subjects' chains, from the server's create times. */
async function windows(subjects: string[]): Promise<number[]> {
  const records = await localAnchors().where("event", "==", HEAD_EVENT).get();
  const recordAt = new Map<string, number>();
  for (const d of records.docs) {
    const heads = (d.get("anchor.heads") ?? {}) as Record<string, ChainHead>;
    for (const [shard, h] of Object.entries(heads)) recordAt.set(evidenceDocId(shard, h.seq), ms(d.createTime));
  }
  const out: number[] = [];
  const audits = db().collection(COLLECTIONS.deletionAudits);
  for (const shard of new Set(subjects.map(shardOfKey))) {
    const snap = await audits.where(FieldPath.documentId(), ">=", audits.doc(`${shard}-`)).where(FieldPath.documentId(), "<", audits.doc(`${shard}.`)).get();
    for (const d of snap.docs) {
      const at = recordAt.get(d.id);
      if (at === undefined) throw new Error(`no head record for ${d.id}: the record was not written`);
      out.push(at - ms(d.createTime));
    }
  }
  return out;
}

/** Subjects in chains of their own: a chain the record-less baseline appends to has entries without records. */
const taken = new Set<string>();
function subjectsApart(prefix: string, n: number): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < n; i++) {
    const s = `${prefix}-${i}`;
    if (taken.has(shardOfKey(s))) continue;
    taken.add(shardOfKey(s));
    out.push(s);
  }
  return out;
}

async function main(): Promise<void> {
  if (!process.env.FIRESTORE_EMULATOR_HOST) throw new Error("run under scripts/emulators.mjs (the emulators' anchors database is the anchor store here)");
  const run = `w${Date.now().toString(36)}`;
  const [warm, warmBare] = subjectsApart(`${run}-warm`, 2) as [string, string];
  const seqSubjects = subjectsApart(`${run}-seq`, 8);
  const bareSubjects = subjectsApart(`${run}-bare`, 8);
  const writers = 16;
  const conSubjects = subjectsApart(`${run}-con`, writers);
  // Warm-up (untimed): the JVM's first commits are slow.
  for (let i = 0; i < 20; i++) await recordEvidence(warm, body(i));
  for (let i = 0; i < 20; i++) await appendWithoutRecord(warmBare, body(i));

  const withRecord: number[] = [];
  const without: number[] = [];
  for (let i = 0; i < appends; i++) {
    withRecord.push(await timed(() => recordEvidence(seqSubjects[i % 8]!, body(i))));
    without.push(await timed(() => appendWithoutRecord(bareSubjects[i % 8]!, body(i))));
  }
  const seqWindows = await windows(seqSubjects);

  const conLatency: number[] = [];
  await Promise.all(
    conSubjects.map(async (s) => {
      for (let i = 0; i < Math.ceil(appends / writers); i++) conLatency.push(await timed(() => recordEvidence(s, body(i))));
    }),
  );
  const conWindows = await windows(conSubjects);

  // The deployed form: one structured log line per append (written to a sink that discards it).
  const devnull = new Writable({ write: (_c, _e, done) => done() });
  const key = signingKey();
  const logLine: number[] = [];
  for (let i = 0; i < 2000; i++) {
    const record = makeHeadRecord({ projectId: "p", databaseId: "(default)", atMs: Date.now(), shard: "s0001", head: { seq: i + 1, hash: "a".repeat(64) } }, key);
    logLine.push(await timed(() => Promise.resolve(writeAnchorLine({ event: HEAD_EVENT, anchor: record }, devnull))));
  }

  const result = {
    appends,
    sequential: { appendMs: { withRecord: stats(withRecord), withoutRecord: stats(without) }, commitToRecordMs: stats(seqWindows) },
    concurrent: { writers, appendMs: stats(conLatency), commitToRecordMs: stats(conWindows) },
    deployedLogLineMs: stats(logLine),
  };
  const s = result.sequential;
  process.stdout.write(
    [
      `head records on the emulators, ${appends} sequential appends, then ${writers} concurrent writers`,
      `  append, with the record:     p50 ${s.appendMs.withRecord.p50} ms  p95 ${s.appendMs.withRecord.p95} ms`,
      `  append, without the record:  p50 ${s.appendMs.withoutRecord.p50} ms  p95 ${s.appendMs.withoutRecord.p95} ms`,
      `  commit -> record readable:   p50 ${s.commitToRecordMs.p50} ms  p99 ${s.commitToRecordMs.p99} ms  max ${s.commitToRecordMs.max} ms`,
      `  concurrent commit -> record: p50 ${result.concurrent.commitToRecordMs.p50} ms  p99 ${result.concurrent.commitToRecordMs.p99} ms  max ${result.concurrent.commitToRecordMs.max} ms`,
      `  deployed form (one log line): p50 ${result.deployedLogLineMs.p50} ms  p99 ${result.deployedLogLineMs.p99} ms`,
      JSON.stringify(result),
      "",
    ].join("\n"),
  );
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
