// Child process: evidence appends per second with 64 concurrent writers shaped like TTL triggers, each a
// transaction that appends one evidence entry together with its effect. One run of this script is one mode;
// run.mjs runs the single head (RETENTION_EVIDENCE_SHARDS=1: one head document every append reads and moves,
// as the first release's chain did) and the ledger (the default shard count) in the same bench run.
//
//   node bench/evidence-ledger.mjs <label> <seconds> [writers] [shape]
//
// shape "trigger" (default): each writer calls the real TTL trigger's effect, processTtlDelete, for the delete
// event of an expired session (its own path and event id): the marker, the hold fence and holds, the child
// listing, and the evidence entry, in the trigger's own transaction.
// shape "tx": the same transaction without the trigger's other reads: read the marker, the fence and the head,
// write the marker and the entry.
// Prints one JSON line: appends committed, appends per second, latency percentiles, and whether the ledger the
// run wrote verifies (every chain linear, every head at its last entry, every MAC good).
import { functionsLib } from "./lib.mjs";

const [label, secondsRaw, writersRaw, shape = "trigger"] = process.argv.slice(2);
const seconds = Number(secondsRaw ?? 8);
const writers = Number(writersRaw ?? 64);
const { db } = functionsLib("platform/firestore.js");
const { processTtlDelete } = functionsLib("ttl/delete.js");
const { openEvidence, EVIDENCE_TX } = functionsLib("evidence/store.js");
const { readFenceInTx } = functionsLib("holds/fence.js");
const { verifyEvidence } = functionsLib("evidence/verify.js");
const { readHeads } = functionsLib("evidence/anchor.js");
const { setting } = functionsLib("platform/settings.js");
const firestore = db();

const DAY = 86_400_000;
const now = Date.now();
/** The deleted session's last snapshot, as the delete event carries it: expired a day ago, unheld. */
const sessionData = (uid) => ({
  uid,
  tenantId: "t-bench",
  retentionClass: "session-30d",
  lifecycleState: "ACTIVE",
  policyVersion: "v1",
  createdAt: new Date(now - 31 * DAY),
  expireAt: new Date(now - DAY),
  legalHold: false,
  holdIds: [],
});

async function oneTrigger(w, k) {
  const path = `sessions/bench-${label}-${w}-${k}`;
  const r = await processTtlDelete({ eventId: `bench-${label}-${w}-${k}`, eventTimeMs: Date.now(), path, data: sessionData(`u-${w}`), trigger: "ttlDeleted-sessions", childCollections: ["tokens"] });
  if (r.outcome !== "PROCESSED") throw new Error(`${path}: ${r.outcome} ${r.classification}`);
}

async function oneTx(w, k) {
  const path = `sessions/bench-${label}-${w}-${k}`;
  const marker = firestore.collection("processedEvents").doc(`bench-${label}-${w}-${k}`);
  await firestore.runTransaction(async (tx) => {
    const seen = await tx.get(marker);
    if (seen.exists) return;
    const fenceGeneration = await readFenceInTx(tx);
    const evidence = await openEvidence(tx, path);
    tx.set(marker, { state: "DONE", path });
    evidence.append({
      action: "TTL_DELETE",
      actor: { type: "system", id: "ttlDeleted-sessions" },
      decision: { reason: "SWEEPER", retentionClass: "session-30d" },
      policyVersion: "v1",
      atMs: Date.now(),
      eventId: marker.id,
      paths: [path],
      detail: { fenceGeneration },
    });
  }, EVIDENCE_TX);
}

const one = shape === "tx" ? oneTx : oneTrigger;

// Warm-up (connections, JIT), not timed: a few appends per writer's worth.
await Promise.all(Array.from({ length: 8 }, (_, w) => one(`warm${w}`, 0)));

const latencies = [];
let appends = 0;
const started = performance.now();
const deadline = started + seconds * 1000;
await Promise.all(
  Array.from({ length: writers }, async (_, w) => {
    for (let k = 0; performance.now() < deadline; k++) {
      const t0 = performance.now();
      await one(w, k);
      latencies.push(performance.now() - t0);
      appends++;
    }
  }),
);
const elapsed = (performance.now() - started) / 1000;
latencies.sort((a, b) => a - b);
const pct = (p) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]);
const heads = await readHeads();
const entries = [...heads.values()].reduce((n, h) => n + h.seq, 0);
const verification = await verifyEvidence({ anchors: { kind: "none" } });
process.stdout.write(
  `${JSON.stringify({
    label,
    shape,
    shards: setting("evidenceShards"),
    writers,
    seconds: Number(elapsed.toFixed(2)),
    appends,
    appendsPerSecond: Number((appends / elapsed).toFixed(1)),
    latencyMs: { p50: pct(50), p95: pct(95), max: Math.round(latencies[latencies.length - 1]) },
    chainsUsed: heads.size,
    entriesInLedger: entries,
    ledgerVerifies: verification.ok,
    findings: verification.findings.length,
  })}\n`,
);
process.exit(0);
