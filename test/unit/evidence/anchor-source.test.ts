import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { anchorsInText, loadAnchors } from "../../../functions/src/evidence/anchor-source";
import { ANCHOR_EVENT, evidenceKey, HEAD_EVENT, makeAnchor, makeHeadRecord } from "../../../functions/src/evidence/rules";

const KEY = evidenceKey("k".repeat(40));
const a1 = makeAnchor({ projectId: "p", databaseId: "(default)", atMs: 1, heads: { s0001: { seq: 1, hash: "a".repeat(64) } } }, KEY);
const a2 = makeAnchor({ projectId: "p", databaseId: "(default)", atMs: 2, heads: { s0001: { seq: 2, hash: "b".repeat(64) } } }, KEY);
const r3 = makeHeadRecord({ projectId: "p", databaseId: "(default)", atMs: 3, shard: "s0001", head: { seq: 3, hash: "c".repeat(64) } }, KEY);

/**
 * A LogEntry as a Cloud Storage sink stores it: a function's stdout line lands in the log
 * `run.googleapis.com/stdout`, its fields (the payload, and the logSync line's own logName and resource) in
 * jsonPayload.
 */
const sinkLine = (event: string, anchor: unknown, at: string) =>
  JSON.stringify({
    insertId: `i-${at}`,
    jsonPayload: { event, anchor, logName: "projects/p/logs/retention-evidence-anchors", resource: { type: "cloud_run_revision" } },
    labels: { event },
    logName: "projects/p/logs/run.googleapis.com%2Fstdout",
    receiveTimestamp: at,
    resource: { type: "cloud_run_revision", labels: { project_id: "p", service_name: "evidenceanchor" } },
    severity: "NOTICE",
    timestamp: at,
  });

describe("anchors in an exported log", () => {
  it("reads the JSON lines a Cloud Storage sink writes, skipping other entries and lines that are not JSON", () => {
    const text = [
      JSON.stringify({ logName: "projects/p/logs/retention-evidence-anchors", jsonPayload: { event: ANCHOR_EVENT, anchor: a1 } }),
      "not json at all",
      JSON.stringify({ logName: "projects/p/logs/retention-metrics", jsonPayload: { metric: "retention.candidates", value: 3 } }),
      "",
      JSON.stringify({ event: ANCHOR_EVENT, anchor: a2 }),
    ].join("\n");
    expect(anchorsInText(text)).toEqual({ anchors: [a1, a2], malformed: [] });
  });

  it("reads the JSON array `gcloud logging read --format=json` prints, and nothing from an empty file", () => {
    expect(anchorsInText(JSON.stringify([{ jsonPayload: { anchor: a2 } }, { jsonPayload: { anchor: a1 } }])).anchors).toEqual([a2, a1]);
    expect(anchorsInText("  \n")).toEqual({ anchors: [], malformed: [] });
  });

  it("names an anchor entry that is malformed by its file and line, and keeps reading", () => {
    const text = [sinkLine(ANCHOR_EVENT, { ...a1, heads: { s0001: { seq: null, hash: "a".repeat(64) } } }, "t1"), sinkLine(HEAD_EVENT, r3, "t2")].join("\n");
    expect(anchorsInText(text, "f.json")).toEqual({ anchors: [r3], malformed: [{ where: "f.json:1", detail: "head s0001: its seq is null, not a positive integer" }] });
  });

  it("reads the directory tree a Cloud Storage sink writes (<log>/YYYY/MM/DD/HH:00:00_HH:59:59_S0.json), anchors and head records alike, of this ledger only", async () => {
    const root = mkdtempSync(join(tmpdir(), "anchor-bucket-"));
    const hour = (d: string, h: string) => {
      const dir = join(root, "run.googleapis.com", "stdout", ...d.split("/"));
      mkdirSync(dir, { recursive: true });
      return join(dir, `${h}:00:00_${h}:59:59_S0.json`);
    };
    const other = makeAnchor({ projectId: "p", databaseId: "restored", atMs: 4, heads: { s0001: { seq: 9, hash: "d".repeat(64) } } }, KEY);
    writeFileSync(hour("2026/12/01", "16"), `${sinkLine(ANCHOR_EVENT, a1, "2026-12-01T16:10:00Z")}\n${sinkLine(HEAD_EVENT, r3, "2026-12-01T16:11:00Z")}\n`);
    writeFileSync(hour("2026/12/01", "17"), `${sinkLine(ANCHOR_EVENT, a2, "2026-12-01T17:00:00Z")}\n${sinkLine(ANCHOR_EVENT, other, "2026-12-01T17:01:00Z")}\n`);
    // The sink may split an hour into several shards (S0, S1, …); a stray file of another export is read too.
    writeFileSync(join(root, "run.googleapis.com", "stdout", "2026", "12", "01", "17:00:00_17:59:59_S1.json"), `${sinkLine(HEAD_EVENT, { ...r3, atMs: 5 }, "2026-12-01T17:30:00Z")}\n`);
    const loaded = await loadAnchors({ kind: "path", path: root }, { projectId: "p", databaseId: "(default)" });
    expect(loaded.anchors.map((a) => a.atMs)).toEqual([1, 3, 2, 5]);
    expect(loaded.anchors.filter((a) => a.scope === "append")).toHaveLength(2);
    expect(loaded.malformed).toEqual([]);
  });
});
