import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { anchorFromLogLine, type EvidenceAnchor } from "./rules";
import { ANCHOR_DATABASE, localAnchorPayloads } from "../platform/anchors";
import { governedDatabaseId } from "../platform/firestore";
import { settings } from "../platform/settings";

/**
 * Where a verifier reads anchors from:
 * - `local`: the emulators' anchors database;
 * - `path`: a file or a directory of files, as exported from the locked bucket the anchor log is routed to (a
 *   Cloud Storage sink writes JSON lines of LogEntry), as `gcloud logging read --format=json` prints them (a
 *   JSON array), or as a bundle carries them (anchors.jsonl);
 * - `none`: no anchors (a truncation, a wiped ledger or a deleted chain then goes unnoticed: the CLI asks for
 *   this explicitly).
 */
export type AnchorSource = { kind: "local" } | { kind: "path"; path: string } | { kind: "none" };

/** Something in the anchor store that claims to be an anchor and is not one (wrong types, NaN, missing fields). */
export interface MalformedAnchor {
  /** Where it is: a document of the anchors database, or a file and line. */
  where: string;
  detail: string;
}

/**
 * The anchors (periodic anchors and per-append head records) of one ledger (this project and database, or the
 * ones given), from a source. Lines that are not anchors (other log entries in the same export) are skipped;
 * anchors of another database are not this ledger's; malformed ones are returned apart, to be reported.
 */
export async function loadAnchors(
  source: AnchorSource,
  ledger: { projectId: string; databaseId: string } = { projectId: settings.projectId(), databaseId: governedDatabaseId() },
): Promise<{ label: string; anchors: EvidenceAnchor[]; malformed: MalformedAnchor[] }> {
  const found: EvidenceAnchor[] = [];
  const malformed: MalformedAnchor[] = [];
  let label: string;
  if (source.kind === "local") {
    label = `emulator database ${ANCHOR_DATABASE}`;
    for await (const { id, data } of localAnchorPayloads(ledger.databaseId)) {
      const a = anchorFromLogLine(data);
      if (a && "anchor" in a) found.push(a.anchor);
      else if (a) malformed.push({ where: `${ANCHOR_DATABASE}/${id}`, detail: a.malformed });
    }
  } else if (source.kind === "path") {
    label = source.path;
    for (const file of filesUnder(source.path)) {
      const r = anchorsInText(readFileSync(file, "utf8"), file);
      found.push(...r.anchors);
      malformed.push(...r.malformed);
    }
  } else {
    return { label: "none", anchors: [], malformed: [] };
  }
  return { label, anchors: found.filter((a) => a.projectId === ledger.projectId && a.databaseId === ledger.databaseId), malformed };
}

/**
 * Every file under a path, in name order: a single file, a bundle's anchors.jsonl, or the tree a Cloud Storage
 * sink writes (`<log name>/YYYY/MM/DD/HH:00:00_HH:59:59_S<n>.json`, one LogEntry per line), as copied from the
 * bucket with `gcloud storage cp -r`.
 */
function filesUnder(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path, { withFileTypes: true })
    .sort((a, b) => (a.name < b.name ? -1 : 1))
    .flatMap((e) => (e.name.startsWith(".") ? [] : filesUnder(join(path, e.name))));
}

/** Anchors in a text: a JSON array of log entries (`gcloud logging read --format=json`), or one JSON value per line. */
export function anchorsInText(text: string, file = "anchors"): { anchors: EvidenceAnchor[]; malformed: MalformedAnchor[] } {
  const trimmed = text.trim();
  const anchors: EvidenceAnchor[] = [];
  const malformed: MalformedAnchor[] = [];
  if (trimmed.length === 0) return { anchors, malformed };
  const values: { where: string; value: unknown }[] = [];
  if (trimmed.startsWith("[")) {
    let array: unknown;
    try {
      array = JSON.parse(trimmed);
    } catch {
      return { anchors, malformed: [{ where: file, detail: "a JSON array that does not parse" }] };
    }
    if (Array.isArray(array)) array.forEach((value, i) => values.push({ where: `${file}[${i}]`, value }));
  } else {
    trimmed.split("\n").forEach((line, i) => {
      if (line.trim().length === 0) return;
      try {
        values.push({ where: `${file}:${i + 1}`, value: JSON.parse(line) });
      } catch {
        // Not JSON: not an anchor (a log export may hold other lines).
      }
    });
  }
  for (const { where, value } of values) {
    const a = anchorFromLogLine(value);
    if (a && "anchor" in a) anchors.push(a.anchor);
    else if (a) malformed.push({ where, detail: a.malformed });
  }
  return { anchors, malformed };
}
