import { resolve } from "node:path";
import { bundleLedger, exportEvidence, verifierKeys, verifyLedger } from "../../evidence/index";
import { EXIT, positiveIntOpt, stringOpt, type Command } from "../command";
import { keyValues, progressLine, writeJson, writeOut } from "../output";
import { UsageError } from "../target";
import { anchorsOption, renderVerification } from "./evidence-shared";

export const exportEvidenceCommand: Command = {
  name: "export-evidence",
  summary: "Export the evidence ledger as a bundle an auditor verifies offline (verify-evidence --bundle)",
  usage: "retention export-evidence --out <dir> [--anchors <path> | --without-anchors] [--json]",
  details: `Writes the ledger as of one cut into <dir> (created; it must be empty): manifest.json (project, database,
cut time, chains, key ids, and the SHA-256 of every file), heads.json, chains/<chain>.jsonl (one entry per line,
in seq order; legacy.jsonl is the first release's single chain) and anchors.jsonl (the anchors and head records up to the cut, as
a convenience: an auditor takes the anchors from the locked bucket). Every chain is exported up to the head read
at the cut, so the bundle is consistent while writers append. Then verifies the bundle as an auditor would, with
the evidence key when this shell has it. What a reader can check without the key: docs/EVIDENCE-LEDGER.md. Read-only
on the database.

Options:
  --out <dir>         where to write the bundle
  --anchors <path>    anchors to copy into the bundle (default on the emulators: the evidence-anchors database)
  --without-anchors   write no anchors into the bundle
  --page-size <n>     entries per read (default 500)
  --json              machine-readable output

Exit: 0 exported and the bundle verifies, 1 exported but it does not verify, 2 usage or connection error.`,
  options: { out: { type: "string" }, anchors: { type: "string" }, "without-anchors": { type: "boolean" }, "page-size": { type: "string" } },
  positionals: [],
  needsFirestore: true,
  validate({ values }) {
    if (stringOpt(values, "out") === undefined) throw new UsageError("export-evidence needs --out <dir>.");
  },
  async run({ values, json, target }) {
    const out = resolve(stringOpt(values, "out")!);
    const anchors = stringOpt(values, "anchors") === undefined && values["without-anchors"] !== true && !target.emulator ? ({ kind: "none" } as const) : anchorsOption(values, target);
    const progress = progressLine();
    let manifest;
    try {
      manifest = await exportEvidence(out, { anchors, pageSize: positiveIntOpt(values, "page-size", 500), onProgress: (n) => progress.update(`exporting evidence: ${n} entries`) });
    } catch (err) {
      if (err instanceof Error && /is not empty/.test(err.message)) throw new UsageError(`--out ${out} is not empty: export into a new directory.`);
      throw err;
    }
    const verification = await verifyLedger(bundleLedger(out), {
      keys: verifierKeys(),
      anchors: manifest.anchors ? { kind: "path", path: `${out}/anchors.jsonl` } : { kind: "none" },
      ledger: { projectId: manifest.projectId, databaseId: manifest.databaseId },
      anchorsUntilMs: manifest.cutAtMs,
      onProgress: (n) => progress.update(`verifying the bundle: ${n} entries`),
    });
    progress.done();
    const entries = manifest.chains.reduce((n, c) => n + c.entries, 0);
    if (json) writeJson({ out, manifest: { ...manifest, files: Object.keys(manifest.files).length }, verification });
    else {
      writeOut(
        [
          keyValues([
            ["bundle", out],
            ["cut at", manifest.exportedAt],
            ["entries", entries],
            ["chains", manifest.chains.length],
            ["anchors", manifest.anchors ? `${manifest.anchors.count} and ${manifest.anchors.headRecords} head record(s) from ${manifest.anchors.source}` : "none (the auditor brings them from the bucket)"],
          ]),
          "",
          renderVerification(verification, "the bundle"),
        ].join("\n"),
      );
    }
    return verification.ok ? EXIT.ok : EXIT.findings;
  },
};
