/**
 * The log sink's filter (ANCHOR_SINK_FILTER) must select every log entry the anchor store is made of, in every
 * form the code writes them, and nothing else the service logs. The filter is evaluated here by a small
 * evaluator of the part of the Cloud Logging query language it uses: comparisons `field="value"` joined by OR
 * (and AND), a field path read through the LogEntry as Cloud Logging stores it. The docs quote the same string.
 */
import { readFileSync } from "node:fs";
import { Writable } from "node:stream";
import { Logging } from "@google-cloud/logging";
import { describe, expect, it } from "vitest";
import { ANCHOR_EVENT, ANCHOR_SINK_FILTER, evidenceKey, HEAD_EVENT, makeAnchor, makeHeadRecord } from "../../../functions/src/evidence/rules";
import { anchorApiEntry, ANCHOR_LOG_NAME, writeAnchorLine } from "../../../functions/src/platform/anchors";

type Json = Record<string, unknown>;

/** Evaluates a filter of `path="value"` terms joined by AND and OR (AND binds tighter, as in the query language). */
function matches(filter: string, entry: Json): boolean {
  const term = /^([A-Za-z_][\w.]*)\s*=\s*"((?:[^"\\]|\\.)*)"$/;
  return filter.split(/\s+OR\s+/).some((conj) =>
    conj.split(/\s+AND\s+/).every((t) => {
      const m = term.exec(t.trim());
      if (!m) throw new Error(`the evaluator does not know the term ${JSON.stringify(t)}: keep the filter to exact-match terms`);
      const value = m[1]!.split(".").reduce<unknown>((o, k) => (o && typeof o === "object" ? (o as Json)[k] : undefined), entry);
      return value === JSON.parse(`"${m[2]!}"`);
    }),
  );
}

/**
 * A function's stdout line as Cloud Logging stores it (structured logging on Cloud Run, where Cloud Functions
 * 2nd gen runs): the special fields become the entry's own, everything else its jsonPayload, in the log
 * `run.googleapis.com/stdout`.
 */
function storedFromStdout(line: string): Json {
  const o = JSON.parse(line) as Json;
  const { severity, message, "logging.googleapis.com/labels": labels, "logging.googleapis.com/insertId": insertId, timestamp, ...rest } = o;
  void message;
  return { logName: "projects/p/logs/run.googleapis.com%2Fstdout", severity, labels, insertId, timestamp, jsonPayload: rest };
}

/** Every line writeAnchorLine writes for one payload (the library adds a diagnostic entry on a process's first write). */
function stdoutLines(payload: { event: string; anchor: { atMs: number } }): string[] {
  let out = "";
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      out += chunk.toString();
      done();
    },
  });
  writeAnchorLine(payload, sink);
  return out.trim().split("\n");
}

const KEY = evidenceKey("k".repeat(40));
const anchor = makeAnchor({ projectId: "p", databaseId: "(default)", atMs: 1, heads: { s0001: { seq: 1, hash: "a".repeat(64) } } }, KEY);
const record = makeHeadRecord({ projectId: "p", databaseId: "(default)", atMs: 2, shard: "s0001", head: { seq: 2, hash: "b".repeat(64) } }, KEY);
const written = [
  { event: ANCHOR_EVENT, anchor },
  { event: HEAD_EVENT, anchor: record },
];

describe("the anchor sink's filter", () => {
  it("selects the periodic anchor and every head record as a deployed function writes them (stdout)", () => {
    for (const payload of written) {
      const stored = stdoutLines(payload).map(storedFromStdout);
      const mine = stored.filter((e) => (e.jsonPayload as Json).event === payload.event);
      expect(mine).toHaveLength(1);
      expect(mine[0]!.jsonPayload).toMatchObject({ event: payload.event, anchor: payload.anchor });
      // The anchor's entry is selected; anything else on the same stream (the library's diagnostic entry) is not.
      for (const e of stored) expect(matches(ANCHOR_SINK_FILTER, e), JSON.stringify(e).slice(0, 80)).toBe(e === mine[0]);
    }
  });

  it("selects them as the CLI writes them through the Logging API", () => {
    const log = new Logging({ projectId: "p" }).log(ANCHOR_LOG_NAME);
    for (const payload of written) {
      const entry = anchorApiEntry(log, payload);
      const stored: Json = { ...(entry.metadata as Json), logName: `projects/p/logs/${ANCHOR_LOG_NAME}`, jsonPayload: entry.data as Json };
      expect(matches(ANCHOR_SINK_FILTER, stored), payload.event).toBe(true);
    }
  });

  it("selects nothing else the service logs", () => {
    const others: Json[] = [
      { logName: "projects/p/logs/run.googleapis.com%2Fstdout", jsonPayload: { event: "evidence.anchored", chains: 3 } },
      { logName: "projects/p/logs/run.googleapis.com%2Fstdout", jsonPayload: { event: "evidence.head.unpublished", shard: "s0001" } },
      { logName: "projects/p/logs/retention-metrics", jsonPayload: { metric: "retention.candidates", value: 3 } },
      { logName: "projects/p/logs/run.googleapis.com%2Fstdout", textPayload: "retention.evidence.anchor" },
    ];
    for (const e of others) expect(matches(ANCHOR_SINK_FILTER, e)).toBe(false);
  });

  it("is the filter the operator's commands in docs/EVIDENCE-LEDGER.md create the sink with", () => {
    const doc = readFileSync(new URL("../../../docs/EVIDENCE-LEDGER.md", import.meta.url), "utf8");
    expect(doc).toContain(`--log-filter='${ANCHOR_SINK_FILTER}'`);
  });
});
