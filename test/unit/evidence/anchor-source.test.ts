import { describe, expect, it } from "vitest";
import { anchorsInText } from "../../../functions/src/evidence/anchor-source";
import { ANCHOR_EVENT, evidenceKey, makeAnchor } from "../../../functions/src/evidence/rules";

const KEY = evidenceKey("k".repeat(40));
const a1 = makeAnchor({ projectId: "p", databaseId: "(default)", atMs: 1, heads: { s0001: { seq: 1, hash: "a".repeat(64) } } }, KEY);
const a2 = makeAnchor({ projectId: "p", databaseId: "(default)", atMs: 2, heads: { s0001: { seq: 2, hash: "b".repeat(64) } } }, KEY);

describe("anchors in an exported log", () => {
  it("reads the JSON lines a Cloud Storage sink writes, skipping other entries and lines that are not JSON", () => {
    const text = [
      JSON.stringify({ logName: "projects/p/logs/retention-evidence-anchors", jsonPayload: { event: ANCHOR_EVENT, anchor: a1 } }),
      "not json at all",
      JSON.stringify({ logName: "projects/p/logs/retention-metrics", jsonPayload: { metric: "retention.candidates", value: 3 } }),
      "",
      JSON.stringify({ event: ANCHOR_EVENT, anchor: a2 }),
    ].join("\n");
    expect(anchorsInText(text)).toEqual([a1, a2]);
  });

  it("reads the JSON array `gcloud logging read --format=json` prints, and nothing from an empty file", () => {
    expect(anchorsInText(JSON.stringify([{ jsonPayload: { anchor: a2 } }, { jsonPayload: { anchor: a1 } }]))).toEqual([a2, a1]);
    expect(anchorsInText("  \n")).toEqual([]);
  });
});
