import { verifyEvidence } from "../../evidence/index";
import { EXIT, positiveIntOpt, type Command } from "../command";
import { keyValues, progressLine, table, writeJson, writeOut } from "../output";

export const verifyEvidenceCommand: Command = {
  name: "verify-evidence",
  summary: "Walk the deletionAudits hash chain and report edited, inserted or removed entries",
  usage: "retention verify-evidence [--json] [--page-size <n>]",
  details: `Reads deletionAudits in document-id (= seq) order, recomputes every hash, checks every link and
the chain head (retentionJobs/evidence-chain-head), and reports each problem with its seq and document id:
EDITED (content no longer matches its hash), REMOVED (a gap, or the head is ahead of the last entry),
INSERTED (a repeated seq, or an id that does not match its seq), BROKEN_LINK, HEAD_MISMATCH. Read-only.

Options:
  --page-size <n>   entries per read (default 500)
  --json            machine-readable output

Exit: 0 the chain verifies, 1 it does not, 2 usage or connection error.`,
  options: { "page-size": { type: "string" } },
  positionals: [],
  needsFirestore: true,
  async run({ values, json }) {
    const progress = progressLine();
    const r = await verifyEvidence({
      pageSize: positiveIntOpt(values, "page-size", 500),
      onProgress: (n) => progress.update(`verifying evidence: ${n} entries`),
    });
    progress.done();
    if (json) {
      writeJson(r);
    } else {
      const parts: string[] = [];
      if (r.findings.length > 0) {
        parts.push(table(["PROBLEM", "SEQ", "DOC ID", "DETAIL"], r.findings.map((f) => [f.problem, f.seq, f.docId ?? "-", f.detail])), "");
      }
      parts.push(
        keyValues([
          ["result", r.ok ? "OK: the chain verifies" : `FAILED: ${r.findings.length} problem(s)${r.truncated ? " (list truncated)" : ""}`],
          ["entries checked", r.checked],
          ["head seq", r.head ? r.head.seq : null],
          ["duration", `${r.durationMs} ms`],
        ]),
      );
      writeOut(parts.join("\n"));
    }
    return r.ok ? EXIT.ok : EXIT.findings;
  },
};
