import { resolve } from "node:path";
import { bundleLedger, verifierKeys, verifyLedger, type BundleManifest, type EvidenceVerification } from "../../evidence/index";
import { exportAcrossCells } from "../../cells/index";
import { registryPolicy } from "../../platform/registry";
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

Under a registry with several governed databases it exports every database's ledger: the primary's bundle at
<dir>, each other database's under <dir>/databases/<name>/ (a complete bundle of its own); --database narrows to
one (its bundle at <dir>). --json then prints {out, ok, databases: {<name>: {out, manifest, verification}}}.

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
    // Every governed database's ledger: the primary's bundle at --out, each other's under databases/<name>/
    // (--database narrows to one, at --out); under one database, the bundle as it always was.
    let bundles;
    try {
      bundles = await exportAcrossCells(out, { anchors, pageSize: positiveIntOpt(values, "page-size", 500), onProgress: (n) => progress.update(`exporting evidence: ${n} entries`) }, target.cell);
    } catch (err) {
      if (err instanceof Error && /is not empty/.test(err.message)) throw new UsageError(`--out ${out} is not empty: export into a new directory.`);
      throw err;
    }
    const results: Record<string, { dir: string; manifest: BundleManifest; verification: EvidenceVerification }> = {};
    for (const [cell, { dir, manifest }] of Object.entries(bundles)) {
      const verification = await verifyLedger(bundleLedger(dir), {
        keys: verifierKeys(),
        anchors: manifest.anchors ? { kind: "path", path: `${dir}/anchors.jsonl` } : { kind: "none" },
        ledger: { projectId: manifest.projectId, databaseId: manifest.databaseId },
        anchorsUntilMs: manifest.cutAtMs,
        onProgress: (n) => progress.update(`verifying the bundle of ${cell}: ${n} entries`),
      });
      results[cell] = { dir, manifest, verification };
    }
    progress.done();
    const ok = Object.values(results).every((r) => r.verification.ok);
    const jsonOf = (r: (typeof results)[string]) => ({ out: r.dir, manifest: { ...r.manifest, files: Object.keys(r.manifest.files).length }, verification: r.verification });
    const textOf = (r: (typeof results)[string]) => {
      const entries = r.manifest.chains.reduce((n, c) => n + c.entries, 0);
      return [
        keyValues([
          ["bundle", r.dir],
          ["cut at", r.manifest.exportedAt],
          ["entries", entries],
          ["chains", r.manifest.chains.length],
          ["anchors", r.manifest.anchors ? `${r.manifest.anchors.count} and ${r.manifest.anchors.headRecords} head record(s) from ${r.manifest.anchors.source}` : "none (the auditor brings them from the bucket)"],
        ]),
        "",
        renderVerification(r.verification, "the bundle"),
      ].join("\n");
    };
    const names = Object.keys(results);
    if (names.length === 1 && registryPolicy().cells().length === 1) {
      const r = results[names[0]!]!;
      if (json) writeJson(jsonOf(r));
      else writeOut(textOf(r));
    } else if (json) writeJson({ out, ok, databases: Object.fromEntries(names.map((n) => [n, jsonOf(results[n]!)])) });
    else writeOut(names.map((n) => `== database ${n}\n${textOf(results[n]!)}`).join("\n\n"));
    return ok ? EXIT.ok : EXIT.findings;
  },
};
