import type { AnchorSource, EvidenceVerification } from "../../evidence/index";
import { verifierKeys } from "../../evidence/index";
import { scheduleIntervalMs, type KeyRing } from "../../evidence/rules";
import { setting } from "../../platform/settings";
import { stringOpt, type OptionSpec, type OptionValues } from "../command";
import { keyValues, table } from "../output";
import { UsageError, type Target } from "../target";

/** The options verify-evidence and export-evidence share. */
export const EVIDENCE_OPTIONS: OptionSpec = {
  anchors: { type: "string" },
  "without-anchors": { type: "boolean" },
  "without-key": { type: "boolean" },
  "page-size": { type: "string" },
  "anchor-max-age": { type: "string" },
};

export const EVIDENCE_OPTIONS_HELP = `  --anchors <path>    the anchors: a file or directory exported from the bucket the anchor log is routed to
                      (JSON lines as a Cloud Storage sink writes them, or \`gcloud logging read --format=json\`).
                      Default on the emulators: the evidence-anchors database; on a project it must be given
  --without-anchors   check without anchors (then a truncation with the head rewound, a wiped ledger or a deleted
                      chain cannot be seen)
  --without-key       check without the evidence key (then an entry re-hashed forward after the last anchor
                      cannot be seen). The key: RETENTION_EVIDENCE_KEY, or functions/.secret.local on the emulators
  --anchor-max-age <minutes>
                      ANCHOR_STALE when the newest anchor is older than this (default: twice the interval of
                      RETENTION_EVIDENCE_ANCHOR_SCHEDULE; not checked against the emulators' own anchors, whose
                      schedule never fires, unless given)
  --page-size <n>     entries per read (default 500)`;

/** The keys to verify with: the evidence key, unless --without-key; no key and no --without-key is a usage error. */
export function keysOption(values: OptionValues): KeyRing | null {
  if (values["without-key"] === true) return null;
  const keys = verifierKeys();
  if (!keys) {
    throw new UsageError(
      "No evidence key to check the MACs with. Set RETENTION_EVIDENCE_KEY (on a project: `RETENTION_EVIDENCE_KEY=$(gcloud secrets versions access latest --secret=RETENTION_EVIDENCE_KEY)`), or pass --without-key to check everything else.",
    );
  }
  return keys;
}

/**
 * Where the anchors come from: --anchors, else the emulators' anchors database, else (a project) nothing, which
 * must be asked for with --without-anchors. `fallback` is a bundle's own copy.
 */
export function anchorsOption(values: OptionValues, target: Target | null, fallback: AnchorSource | null = null): AnchorSource {
  const path = stringOpt(values, "anchors");
  if (path !== undefined && values["without-anchors"] === true) throw new UsageError("--anchors and --without-anchors contradict each other.");
  if (path !== undefined) return { kind: "path", path };
  if (values["without-anchors"] === true) return { kind: "none" };
  if (fallback) return fallback;
  if (target?.emulator) return { kind: "local" };
  throw new UsageError(
    "Name the anchors: --anchors <dir> with the anchor log exported from its locked bucket (docs/EVIDENCE-LEDGER.md), or --without-anchors (a truncation, a wiped ledger or a deleted chain then goes unnoticed).",
  );
}

/**
 * How old the newest anchor may be before ANCHOR_STALE: --anchor-max-age, else twice the anchor schedule's
 * interval; undefined (not checked) against the emulators' anchors database unless --anchor-max-age is given.
 */
export function anchorMaxAgeOption(values: OptionValues, anchors: AnchorSource): number | undefined {
  const raw = stringOpt(values, "anchor-max-age");
  if (raw !== undefined) {
    const n = Number(raw);
    if (!Number.isFinite(n) || n <= 0) throw new UsageError(`--anchor-max-age must be a positive number of minutes, got ${JSON.stringify(raw)}.`);
    return n * 60_000;
  }
  if (anchors.kind !== "path") return undefined;
  const schedule = setting("evidenceAnchorSchedule");
  const interval = scheduleIntervalMs(schedule);
  if (interval === null) throw new UsageError(`Cannot read an interval from RETENTION_EVIDENCE_ANCHOR_SCHEDULE (${JSON.stringify(schedule)}): give --anchor-max-age <minutes>.`);
  return 2 * interval;
}

/** The human rendering of a verification: its problems, then a summary. */
export function renderVerification(r: EvidenceVerification, what: string): string {
  const parts: string[] = [];
  if (r.findings.length > 0) {
    parts.push(table(["PROBLEM", "CHAIN", "SEQ", "DOC ID", "DETAIL"], r.findings.map((f) => [f.problem, f.shard, f.seq, f.docId ?? "-", f.detail])), "");
  }
  parts.push(
    keyValues([
      ["result", r.ok ? `OK: ${what} verifies` : `FAILED: ${r.findings.length} problem(s)${r.truncated ? " (list truncated)" : ""}`],
      ["entries checked", r.checked],
      ["chains", r.chains],
      ["MACs", r.macs === "checked" ? "checked with the evidence key" : "NOT checked (no key)"],
      ["anchors", r.anchors ? `${r.anchors.count} from ${r.anchors.source}${r.anchors.latestAt ? `, latest ${r.anchors.latestAt}` : ""}, and ${r.anchors.appendRecords} head record(s)` : "NOT checked"],
      ...(r.sinceAnchor ? [["newer than their last anchor", `${r.sinceAnchor.chains} chain(s), ${r.sinceAnchor.entries} entries`] as const] : []),
      ...(r.anchors && r.anchors.afterCut > 0 ? [["anchors after the cut", `${r.anchors.afterCut}, held where the bundle reaches what they name`] as const] : []),
      ["legacy segment", r.legacy ? `${r.legacy.entries} entries${r.legacy.sealedSeq !== null ? `, sealed at ${r.legacy.sealedSeq}` : ", not sealed yet"}` : null],
      ["duration", `${r.durationMs} ms`],
    ]),
  );
  return parts.join("\n");
}
