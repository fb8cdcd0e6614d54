import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { anchorFromLogLine, type EvidenceAnchor } from "./rules";
import { ANCHOR_DATABASE, localAnchorPayloads } from "../platform/anchors";
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

/**
 * The anchors of one ledger (this project and database, or the ones given), from a source. Lines that are not
 * anchors (other log entries in the same export) are skipped; anchors of another database are not this
 * ledger's.
 */
export async function loadAnchors(source: AnchorSource, ledger: { projectId: string; databaseId: string } = { projectId: settings.projectId(), databaseId: settings.databaseId() }): Promise<{ label: string; anchors: EvidenceAnchor[] }> {
  const found: EvidenceAnchor[] = [];
  let label: string;
  if (source.kind === "local") {
    label = `emulator database ${ANCHOR_DATABASE}`;
    for await (const payload of localAnchorPayloads(ledger.databaseId)) {
      const a = anchorFromLogLine(payload);
      if (a) found.push(a);
    }
  } else if (source.kind === "path") {
    label = source.path;
    for (const file of filesUnder(source.path)) found.push(...anchorsInText(readFileSync(file, "utf8")));
  } else {
    return { label: "none", anchors: [] };
  }
  return { label, anchors: found.filter((a) => a.projectId === ledger.projectId && a.databaseId === ledger.databaseId) };
}

function filesUnder(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path, { withFileTypes: true })
    .sort((a, b) => (a.name < b.name ? -1 : 1))
    .flatMap((e) => (e.name.startsWith(".") ? [] : filesUnder(join(path, e.name))));
}

/** Anchors in a text: a JSON array of log entries, or one JSON value per line. */
export function anchorsInText(text: string): EvidenceAnchor[] {
  const trimmed = text.trim();
  if (trimmed.length === 0) return [];
  const values: unknown[] = [];
  if (trimmed.startsWith("[")) values.push(...(JSON.parse(trimmed) as unknown[]));
  else {
    for (const line of trimmed.split("\n")) {
      if (line.trim().length === 0) continue;
      try {
        values.push(JSON.parse(line));
      } catch {
        // Not JSON: not an anchor (a log export may hold other lines).
      }
    }
  }
  return values.map(anchorFromLogLine).filter((a): a is EvidenceAnchor => a !== null);
}
