import { DEFAULT_AUDIT_PAGE_SIZE, FINDING_CODES, SAMPLE_PER_CODE, scanRetention, type AuditResult, nonZero } from "../../audit/index";
import { asOfOption, EXIT, positiveIntOpt, type Command, type OptionValues } from "../command";
import { inEveryCell } from "../../cells/index";
import { registryPolicy } from "../../platform/registry";
import { keyValues, progressLine, table, writeJson, writeOut } from "../output";
import { UsageError, type Target } from "../target";

export const auditCommand: Command = {
  name: "audit",
  summary: "Read-only retention audit: list every finding (exit 1 when there is any)",
  usage: "retention audit [--json] [--as-of <iso>] [--page-size <n>] [--max-findings <n>] [--skip-subjects]",
  details: `Streams every governed collection group, the archives and the open deletion requests, and reports
findings as path, code and detail. Writes nothing (the scheduled run is the one that stores a report).
Codes (definitions in functions/src/audit/rules.ts):
${wrapped(FINDING_CODES.join(", "), 110)}.
Under a registry with several governed databases it audits each one (--database narrows to one); --json then
prints {ok, databases: {<name>: audit}}.

Options:
  --as-of <iso>        audit as though it were that time (emulators only)
  --page-size <n>      documents per read (default 1000)
  --max-findings <n>   findings listed (default 5000; past it, the first ${SAMPLE_PER_CODE} of each
                       code; counts stay exact)
  --skip-subjects      skip the Auth lookups behind ORPHANED_SUBJECT
  --json               machine-readable output

Exit: 0 no findings, 1 findings, 2 usage or connection error.`,
  options: {
    "as-of": { type: "string" },
    "page-size": { type: "string" },
    "max-findings": { type: "string" },
    "skip-subjects": { type: "boolean" },
  },
  positionals: [],
  needsFirestore: true,
  validate({ values, target }) {
    asOfOption(values, target);
    positiveIntOpt(values, "page-size", DEFAULT_AUDIT_PAGE_SIZE);
    positiveIntOpt(values, "max-findings", 5_000);
    requireAuthTarget(values, target);
  },
  async run({ values, json, target }) {
    const asOfMs = asOfOption(values, target);
    const skipSubjects = values["skip-subjects"] === true;
    const progress = progressLine();
    // Every governed database, each audited as one database is (--database narrows to one).
    const results = await inEveryCell(
      (cell) =>
        scanRetention({
          nowMs: asOfMs ?? Date.now(),
          pageSize: positiveIntOpt(values, "page-size", DEFAULT_AUDIT_PAGE_SIZE),
          maxFindings: positiveIntOpt(values, "max-findings", 5_000),
          skipSubjects,
          onProgress: (p) => progress.update(`auditing ${cell} ${p.phase}: ${p.scanned} documents`),
        }),
      target.cell,
    );
    progress.done();
    const names = Object.keys(results);
    const ok = names.every((n) => results[n]!.ok);
    if (names.length === 1 && registryPolicy().cells().length === 1) {
      const result = results[names[0]!]!;
      if (json) writeJson(auditJson(result, asOfMs));
      else writeOut(auditText(result));
    } else if (json) writeJson({ ok, databases: Object.fromEntries(names.map((n) => [n, auditJson(results[n]!, asOfMs)])) });
    else writeOut(names.map((n) => `== database ${n}\n${auditText(results[n]!)}`).join("\n\n"));
    return ok ? EXIT.ok : EXIT.findings;
  },
};

/** ORPHANED_SUBJECT needs Auth: on the emulators that means the Auth emulator, unless it is skipped. */
export function requireAuthTarget(values: OptionValues, target: Target): void {
  if (values["skip-subjects"] !== true && target.emulator && !target.authEmulator) {
    throw new UsageError("FIREBASE_AUTH_EMULATOR_HOST is not set: start the Auth emulator too, or pass --skip-subjects.");
  }
}

export function auditJson(r: AuditResult, asOfMs: number | null) {
  return {
    ok: r.ok,
    policyVersion: r.policyVersion,
    auditedAs: new Date(r.nowMs).toISOString(),
    asOf: asOfMs === null ? null : new Date(asOfMs).toISOString(),
    totalFindings: r.totalFindings,
    truncated: r.truncated,
    byCode: nonZero(r.byCode),
    findings: r.findings,
    stats: r.stats,
    durationMs: r.durationMs,
  };
}

function auditText(r: AuditResult): string {
  const parts: string[] = [];
  if (r.findings.length > 0) {
    parts.push(table(["CODE", "PATH", "DETAIL"], r.findings.map((f) => [f.code, f.path, f.detail])), "");
    parts.push(table(["CODE", "COUNT"], Object.entries(nonZero(r.byCode)).map(([c, n]) => [c, n])), "");
  }
  parts.push(
    keyValues([
      ["result", r.ok ? "OK: no findings" : `FAILED: ${r.totalFindings} finding(s)${r.truncated ? ` (${r.findings.length} listed)` : ""}`],
      ["documents scanned", r.stats.documents],
      ["held documents", r.stats.heldDocuments],
      ["open deletion requests", r.stats.requests.unfinished],
      ["retained under a hold (past due)", `${r.stats.requests.retainedUnderHold} (${r.stats.requests.retainedPastDue})`],
      ["archive entries", r.stats.archives.entries],
      ["subjects checked in Auth", r.stats.subjectsChecked],
      ["policy version", r.policyVersion],
      ["duration", `${r.durationMs} ms`],
    ]),
  );
  return parts.join("\n");
}

/** `text` broken at spaces into lines of at most `width` characters. */
function wrapped(text: string, width: number): string {
  const lines: string[] = [];
  for (const word of text.split(" ")) {
    const last = lines.length - 1;
    if (last >= 0 && lines[last]!.length + 1 + word.length <= width) lines[last] += ` ${word}`;
    else lines.push(word);
  }
  return lines.join("\n");
}
