import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { collectReportData, renderReport } from "../../audit/index";
import { asOfOption, EXIT, stringOpt, type Command, type OptionValues } from "../command";
import { requireAuthTarget } from "./audit";
import { keyValues, progressLine, writeJson, writeOut } from "../output";
import { describeTarget, UsageError } from "../target";

export const reportCommand: Command = {
  name: "report",
  summary: "Write the dashboard: one self-contained HTML page (no network fetches)",
  usage: "retention report [--out <file.html>] [--json] [--as-of <iso>] [--skip-subjects]",
  details: `Runs the read-only audit and the evidence verification, and writes one HTML page with inline CSS,
JS and SVG charts: deletion candidates by class, hold counts, a soft-delete age histogram, the
expiration-to-deletion delay of TTL deletes, requests against their due date, the audit findings and the
evidence-chain status. The page's Content-Security-Policy forbids every network fetch.

Options:
  --out <file>      where to write the page (default report.html)
  --as-of <iso>     judge as though it were that time (emulators only)
  --skip-subjects   skip the Auth lookups behind ORPHANED_SUBJECT
  --json            print a machine-readable summary of what was written

Exit: 0 once the page is written, whatever it shows (use audit and verify-evidence to gate on findings);
2 usage or connection error.`,
  options: { out: { type: "string" }, "as-of": { type: "string" }, "skip-subjects": { type: "boolean" } },
  positionals: [],
  needsFirestore: true,
  validate({ values, target }) {
    outPath(values);
    asOfOption(values, target);
    requireAuthTarget(values, target);
  },
  async run({ values, json, target }) {
    const out = outPath(values);
    const asOfMs = asOfOption(values, target);
    const skipSubjects = values["skip-subjects"] === true;
    const progress = progressLine();
    const data = await collectReportData({
      nowMs: asOfMs ?? Date.now(),
      target: describeTarget(target),
      scan: { skipSubjects },
      onProgress: (t) => progress.update(t),
    });
    progress.done();
    const html = renderReport(data);
    writeFileSync(out, html, "utf8");
    const summary = {
      out,
      bytes: Buffer.byteLength(html),
      auditOk: data.audit.ok,
      findings: data.audit.totalFindings,
      evidenceOk: data.evidence.ok,
      evidenceChecked: data.evidence.checked,
    };
    if (json) writeJson(summary);
    else writeOut(keyValues(Object.entries(summary).map(([k, v]) => [k, v])));
    return EXIT.ok;
  },
};

function outPath(values: OptionValues): string {
  const out = resolve(stringOpt(values, "out") ?? "report.html");
  if (!out.endsWith(".html") && !out.endsWith(".htm")) throw new UsageError(`--out ${JSON.stringify(out)} should name an .html file.`);
  return out;
}
