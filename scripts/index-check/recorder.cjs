"use strict";
/**
 * Records the shape of every query the Admin SDK sends, for the index coverage check (scripts/index-check/check.ts).
 *
 * Test-only instrumentation: it is installed by the vitest setup file (test/helpers/record-queries.ts) and by the
 * preload the emulator harness passes to the Functions emulator's workers and to the CLI (preload.cjs), and only
 * when RETENTION_QUERY_LOG names a folder. Production code is not touched.
 *
 * How it works:
 * - `Firestore.prototype.requestStream` is where every `runQuery` and `runAggregationQuery` leaves the SDK, with the
 *   request proto Firestore itself receives (get(), stream(), count(), tx.get(query), kindless queries, retries),
 *   and where a query listener (onSnapshot) opens its `listen` stream with the query as its target.
 *   Each one is recorded there: database, collection or collection-group scope (or kindless), filters (field,
 *   operator, never values), orders and aggregations.
 * - Who issued it is read from the call stack at the public entry points (Query.get/stream/explain/onSnapshot,
 *   AggregateQuery.get/explain, Transaction.get): the first frame outside node_modules is the code that ran the
 *   query. The request goes out asynchronously, so the site is carried to it by object: the query at the entry
 *   point, then the request proto its toProto() builds. (No AsyncLocalStorage: it would slow every promise of the
 *   suites down.) A request whose query never passed an entry point (the SDK's own retry with a cursor, the
 *   queries recursiveDelete builds) falls back to the stack at requestStream, else it is recorded without a site
 *   and checked as product code.
 * - Each process appends one JSON line per new (shape, issuing frame) to `<dir>/<process>-<pid>.jsonl`, synchronously,
 *   so a worker killed at shutdown loses nothing. A recording failure never breaks the query: it is written as an
 *   `error` line, which fails the check.
 *
 * Plain CommonJS on purpose: the Functions emulator's workers load it with `node --require`, without a TypeScript
 * loader.
 */
const { appendFileSync, mkdirSync } = require("node:fs");
const { createRequire } = require("node:module");
const { isAbsolute, join, relative, sep } = require("node:path");
const { fileURLToPath } = require("node:url");

const REPO_ROOT = join(__dirname, "..", "..");
const INSTALLED = Symbol.for("retention.indexCheck.recorder");
const QUERY_METHODS = new Set(["runQuery", "runAggregationQuery"]);

const CHAIN = 3;

/**
 * The stack frames outside dependencies, innermost first (at most CHAIN of them), relative to the repository: the
 * first is the code that ran the query, the next ones its callers (async callers included).
 */
function framesOf(callSites) {
  const out = [];
  for (let i = 0; i < callSites.length && out.length < CHAIN; i++) {
    const cs = callSites[i];
    let file = cs.getFileName() || "";
    if (file.startsWith("file://")) {
      try {
        file = fileURLToPath(file);
      } catch {
        continue;
      }
    }
    file = file.replace(/\?.*$/, "");
    if (!isAbsolute(file) || file === __filename) continue;
    if (file.includes(`${sep}node_modules${sep}`)) continue;
    const rel = relative(REPO_ROOT, file).split(sep).join("/");
    if (rel.startsWith("..")) continue;
    out.push({ index: i, file: rel, line: cs.getLineNumber() || 0, fn: cs.getFunctionName() || cs.getMethodName() || "" });
  }
  return out;
}

/**
 * Where the current call was issued from: `{ file, line, fn }` of the code that ran the query, plus `via` (its
 * callers in this repository). Under vitest the frames point into transformed code; vitest's own
 * `Error.prepareStackTrace` maps them back to the source, so lines are taken from its text when it has one.
 */
function captureSite() {
  const previous = Error.prepareStackTrace;
  const limit = Error.stackTraceLimit;
  try {
    Error.stackTraceLimit = 80;
    Error.prepareStackTrace = (_err, callSites) => callSites;
    const holder = new Error("query site");
    Error.captureStackTrace(holder, captureSite);
    const callSites = holder.stack;
    const frames = framesOf(callSites);
    if (frames.length === 0) return null;
    let lines = null;
    if (typeof previous === "function") {
      try {
        lines = String(previous(holder, callSites)).split("\n");
      } catch {
        lines = null;
      }
    }
    const located = frames.map((f) => {
      const text = lines ? lines[f.index + 1] || "" : "";
      const m = /:(\d+):\d+\)?\s*$/.exec(text);
      return { file: f.file, line: m && text.includes(f.file) ? Number(m[1]) : f.line, fn: f.fn };
    });
    const [first, ...via] = located;
    return { ...first, via: via.map((f) => `${f.file}:${f.line}${f.fn ? ` ${f.fn}` : ""}`) };
  } finally {
    Error.prepareStackTrace = previous;
    Error.stackTraceLimit = limit;
  }
}

function fieldPathOf(ref) {
  return ref && typeof ref.fieldPath === "string" ? ref.fieldPath : "?";
}

/** A filter proto as a tree of { field, op } leaves under { op: AND|OR, filters }; values are dropped. */
function filterShape(filter) {
  if (!filter) return null;
  if (filter.compositeFilter) {
    const parts = (filter.compositeFilter.filters || []).map(filterShape).filter((f) => f !== null);
    if (parts.length === 0) return null;
    if (parts.length === 1) return parts[0];
    return { op: filter.compositeFilter.op, filters: parts };
  }
  if (filter.fieldFilter) return { field: fieldPathOf(filter.fieldFilter.field), op: filter.fieldFilter.op };
  if (filter.unaryFilter) return { field: fieldPathOf(filter.unaryFilter.field), op: filter.unaryFilter.op };
  return { field: "?", op: "UNKNOWN" };
}

/** The database id in `projects/{p}/databases/{d}/documents[...]`. */
function databaseOf(parent) {
  const m = /^projects\/[^/]+\/databases\/([^/]+)\/documents/.exec(parent || "");
  return m ? m[1] : "?";
}

/**
 * The shape of a runQuery / runAggregationQuery request: what decides which index Firestore needs. Returns null
 * for anything else.
 */
function shapeOfRequest(method, request) {
  if (!QUERY_METHODS.has(method) || !request) return null;
  const aggregation = method === "runAggregationQuery" ? request.structuredAggregationQuery || {} : null;
  const q = aggregation ? aggregation.structuredQuery || {} : request.structuredQuery || {};
  const from = (q.from && q.from[0]) || {};
  const scope = from.collectionId ? (from.allDescendants ? "collection-group" : "collection") : "kindless";
  const shape = {
    database: databaseOf(request.parent),
    scope,
    collectionId: from.collectionId || null,
    where: filterShape(q.where),
    orderBy: (q.orderBy || []).map((o) => ({ field: fieldPathOf(o.field), direction: o.direction || "ASCENDING" })),
    aggregations: aggregation
      ? (aggregation.aggregations || []).map((a) => (a.count ? "count" : a.sum ? `sum(${fieldPathOf(a.sum.field)})` : a.avg ? `avg(${fieldPathOf(a.avg.field)})` : "unknown"))
      : [],
  };
  if (q.findNearest) shape.findNearest = fieldPathOf(q.findNearest.vectorField);
  return shape;
}

/**
 * Patches the SDK that `functionsDir`'s code loads (resolved as firebase-admin resolves it, so it is the same
 * module instance) and starts writing to `dir`. Idempotent per SDK copy.
 */
function install({ functionsDir, dir, processKind }) {
  const file = join(dir, `${processKind}-${process.pid}.jsonl`);
  const write = (record) => {
    try {
      appendFileSync(file, `${JSON.stringify(record)}\n`);
    } catch {
      // The log folder vanished (a new run cleared it): nothing to record into.
    }
  };
  mkdirSync(dir, { recursive: true });
  let sdkDir = "?";
  try {
    const fromFunctions = createRequire(join(functionsDir, "package.json"));
    const sdkMain = createRequire(fromFunctions.resolve("firebase-admin/firestore")).resolve("@google-cloud/firestore");
    sdkDir = sdkMain;
    const sdk = createRequire(sdkMain);
    const { Firestore } = sdk("./index");
    const { Query } = sdk("./reference/query");
    const { AggregateQuery } = sdk("./reference/aggregate-query");
    const { Transaction } = sdk("./transaction");
    let VectorQuery = null;
    try {
      ({ VectorQuery } = sdk("./reference/vector-query"));
    } catch {
      // Older SDKs have no vector queries.
    }
    for (const [name, cls] of Object.entries({ Firestore, Query, AggregateQuery, Transaction })) {
      if (typeof cls !== "function") throw new Error(`@google-cloud/firestore has no ${name} where the recorder looks for it`);
    }
    if (Firestore.prototype[INSTALLED]) {
      write({ kind: "install", process: processKind, pid: process.pid, sdk: relative(REPO_ROOT, sdkDir), already: true });
      return;
    }
    if (typeof Firestore.prototype.requestStream !== "function") throw new Error("Firestore.prototype.requestStream is missing");

    // Who issued a query is known at its public entry point, synchronously; the request is built (toProto) and
    // sent (requestStream) later, after the client's start-up or the transaction's first read. Two weak maps carry
    // the site across: query object -> site at the entry point, request proto -> site when the query builds it.
    const querySites = new WeakMap();
    const requestSites = new WeakMap();
    const seen = new Set();
    const isQuery = (x) => x instanceof Query || x instanceof AggregateQuery || (VectorQuery !== null && x instanceof VectorQuery);
    const remember = (query) => {
      if (!isQuery(query)) return; // tx.get(documentRef) reads no query: no stack to take
      try {
        querySites.set(query, captureSite());
      } catch {
        // attribution is best effort: the query is still recorded at requestStream
      }
    };
    const wrapEntry = (proto, name, target) => {
      const original = proto[name];
      if (typeof original !== "function") return;
      proto[name] = function recordedEntry(...args) {
        remember(target === "argument" ? args[0] : this);
        return original.apply(this, args);
      };
    };
    const wrapToProto = (proto) => {
      const original = proto.toProto;
      if (typeof original !== "function") return;
      proto.toProto = function recordedToProto(...args) {
        const request = original.apply(this, args);
        if (request !== null && typeof request === "object" && querySites.has(this)) requestSites.set(request, querySites.get(this));
        return request;
      };
    };
    for (const name of ["get", "stream", "explain", "explainStream", "onSnapshot"]) wrapEntry(Query.prototype, name);
    for (const name of ["get", "explain"]) wrapEntry(AggregateQuery.prototype, name);
    if (VectorQuery) for (const name of ["get", "explain"]) wrapEntry(VectorQuery.prototype, name);
    wrapEntry(Transaction.prototype, "get", "argument");
    for (const cls of [Query, AggregateQuery, VectorQuery]) if (cls) wrapToProto(cls.prototype);

    const requestStream = Firestore.prototype.requestStream;
    Firestore.prototype.requestStream = function recordedRequestStream(method, bidirectional, request, requestTag) {
      const listenQuery = method === "listen" && request && request.addTarget && request.addTarget.query;
      if (QUERY_METHODS.has(method) || listenQuery) {
        try {
          const shape = listenQuery ? { ...shapeOfRequest("runQuery", listenQuery), listen: true } : shapeOfRequest(method, request);
          const known = requestSites.get(listenQuery || request);
          const site = known !== undefined ? known : captureSite();
          const record = { kind: "query", process: processKind, site, ...shape };
          const key = JSON.stringify(record);
          if (!seen.has(key)) {
            seen.add(key);
            write(record);
          }
        } catch (err) {
          write({ kind: "error", process: processKind, pid: process.pid, error: `recording a ${method} failed: ${err && err.message}` });
        }
      }
      return requestStream.call(this, method, bidirectional, request, requestTag);
    };
    Object.defineProperty(Firestore.prototype, INSTALLED, { value: true });
    write({ kind: "install", process: processKind, pid: process.pid, sdk: relative(REPO_ROOT, sdkDir) });
  } catch (err) {
    write({ kind: "error", process: processKind, pid: process.pid, error: `the query recorder could not be installed (${relative(REPO_ROOT, sdkDir)}): ${err && err.message}` });
  }
}

module.exports = { install, shapeOfRequest, framesOf, REPO_ROOT };
