// Shared by the bench's child processes: the admin app on the emulator, the tree generator, and an
// operation counter that counts Firestore RPC traffic (reads, writes, deletes) as billed, by wrapping the
// Admin SDK's two RPC entry points in the bench process only.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
export const functionsLib = (path) => require(`../functions/lib/${path}`);
const { Firestore } = require("@google-cloud/firestore");

export const BENCH_TENANT = "t-bench";
export const BENCH_USER = "u-bench";
export const MESSAGES_PER_ORDER = 9;

/** Documents in a tree with `orders` orders: tenant + user + orders + 9 messages each. */
export const treeSize = (orders) => 2 + orders * (1 + MESSAGES_PER_ORDER);
export const ordersFor = (docs) => Math.max(1, Math.round((docs - 2) / (1 + MESSAGES_PER_ORDER)));

export const counts = { reads: 0, writes: 0, deletes: 0, rpcs: 0 };
/** RPCs by method name (commit, beginTransaction, runQuery, batchGetDocuments, ...). */
export const rpcsByMethod = new Map();

/** Starts counting afresh (after a contender's untimed preparation). */
export function resetCounts() {
  for (const k of Object.keys(counts)) counts[k] = 0;
  rpcsByMethod.clear();
}

let counting = false;

/**
 * Counts billed operations: documents returned by reads (min 1 per query), writes and deletes in commits that
 * succeeded (a transaction retried after contention is counted once, for the attempt that committed). Shared by
 * the bench and the tests that count a handler's cost from the wire instead of trusting its own arithmetic.
 * Installs once per process. The emulators' anchors database is left out: it stands in for the anchor log lines a
 * deployed function writes (one per evidence append, docs/EVIDENCE-LEDGER.md), which cost no Firestore operation.
 */
/** A request to the emulators' anchors database (`projects/…/databases/evidence-anchors`). */
const isAnchorStore = (request) => {
  const name = request?.database ?? request?.parent ?? "";
  return typeof name === "string" && /\/databases\/evidence-anchors(\/|$)/.test(name);
};

export function countOperations() {
  if (counting) return;
  counting = true;
  const origRequest = Firestore.prototype.request;
  Firestore.prototype.request = function (methodName, request, ...rest) {
    if (isAnchorStore(request)) return origRequest.call(this, methodName, request, ...rest);
    counts.rpcs++;
    rpcsByMethod.set(methodName, (rpcsByMethod.get(methodName) ?? 0) + 1);
    const result = origRequest.call(this, methodName, request, ...rest);
    if (methodName !== "commit" && methodName !== "batchWrite") return result;
    return Promise.resolve(result).then((response) => {
      for (const w of request.writes ?? []) {
        if (w.delete) counts.deletes++;
        else counts.writes++;
      }
      return response;
    });
  };
  const origStream = Firestore.prototype.requestStream;
  Firestore.prototype.requestStream = async function (methodName, bidi, request, ...rest) {
    if (isAnchorStore(request)) return origStream.call(this, methodName, bidi, request, ...rest);
    counts.rpcs++;
    rpcsByMethod.set(methodName, (rpcsByMethod.get(methodName) ?? 0) + 1);
    const stream = await origStream.call(this, methodName, bidi, request, ...rest);
    let docs = 0;
    stream.on("data", (msg) => {
      if (methodName === "batchGetDocuments" && (msg.found || msg.missing)) docs++;
      else if (methodName === "runQuery" && msg.document) docs++;
      else if (methodName === "runAggregationQuery" && msg.result) docs++;
    });
    stream.on("end", () => {
      // A query that returns nothing is still billed one read.
      counts.reads += Math.max(docs, methodName === "runQuery" || methodName === "runAggregationQuery" ? 1 : docs);
    });
    return stream;
  };
}

/**
 * CPU time (ms, user + system) the Firestore emulator's JVM has used so far, read from /proc: the process whose
 * command line names the port FIRESTORE_EMULATOR_HOST points at. Null off Linux or when it is not found (the bench
 * then reports the client's CPU only).
 */
let emulatorPid;
export function emulatorCpuMs() {
  const { readFileSync, readdirSync } = require("node:fs");
  const port = (process.env.FIRESTORE_EMULATOR_HOST ?? "").split(":").pop();
  if (!port) return null;
  if (emulatorPid === undefined) {
    emulatorPid = null;
    try {
      for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
        let cmd;
        try {
          cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
        } catch {
          continue;
        }
        const at = cmd.indexOf("--port");
        if (cmd[0]?.endsWith("java") && at > 0 && cmd[at + 1] === port) emulatorPid = pid;
      }
    } catch {
      return null;
    }
  }
  if (emulatorPid === null) return null;
  try {
    // Fields 14 and 15 (utime, stime) after the command name, which is in parentheses and may hold spaces.
    const stat = readFileSync(`/proc/${emulatorPid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return null;
  }
}
