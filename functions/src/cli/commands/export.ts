import { resolve } from "node:path";
import { exportTenant, verifyExportDir } from "../../export/index";
import { resolveTenantSubject } from "../../requests/index";
import { EXIT, stringOpt, type Command, type OptionValues } from "../command";
import { keyValues, table, writeJson, writeOut } from "../output";
import { UsageError } from "../target";

const ID = /^[A-Za-z0-9_-]{1,128}$/;

type Mode = { kind: "export"; tenantId: string; outDir: string } | { kind: "verify"; dir: string };

function modeOf(values: OptionValues): Mode {
  const tenantId = stringOpt(values, "tenant");
  const out = stringOpt(values, "out");
  const verify = stringOpt(values, "verify");
  if (verify !== undefined) {
    if (tenantId !== undefined || out !== undefined) throw new UsageError("--verify <dir> takes no --tenant or --out.");
    if (verify === "") throw new UsageError("--verify needs a directory.");
    return { kind: "verify", dir: resolve(verify) };
  }
  if (tenantId === undefined || out === undefined) throw new UsageError("export needs --tenant <id> and --out <dir> (or --verify <dir>).");
  if (!ID.test(tenantId)) throw new UsageError(`--tenant ${JSON.stringify(tenantId)} is not a valid id.`);
  if (out === "") throw new UsageError("--out needs a directory.");
  return { kind: "export", tenantId, outDir: resolve(out) };
}

export const exportCommand: Command = {
  name: "export",
  summary: "Export a tenant's data for the customer (--tenant --out), or verify an export (--verify)",
  usage: "retention export (--tenant <id> --out <dir> | --verify <dir>) [--json]",
  details: `--tenant <id> --out <dir> writes the tenant's data (every document of its data map: the tenant's tree,
its directory entries, activity, sessions, events and audit records), whatever their lifecycle state, as JSON
Lines, one file per collection (named after the collection pattern: workspaces.docs.jsonl, ...): each line is one document's
path and business data in canonical JSON, Timestamps as {"$timestamp": ISO-8601}. manifest.json lists every
file with its SHA-256, size and document count, and the SHA-256 of the whole set. The directory must be new or
empty. Read-only on Firestore.

--verify <dir> checks an export directory without Firestore: the manifest parses, every listed file is there
with its recorded SHA-256, size and document count, no unlisted .jsonl file lies beside them, and the set hash
matches the list. Problems: MANIFEST_INVALID, FILE_MISSING, FILE_CHANGED, FILE_UNLISTED, SET_HASH_MISMATCH.

Options:
  --tenant <id>    the tenant to export
  --out <dir>      where to write (created; must be empty)
  --verify <dir>   verify an export directory instead
  --json           machine-readable output (the manifest, or the verification)

Exit: 0 exported, or the export verifies; 1 it does not verify; 2 usage error (unknown tenant
SUBJECT_NOT_FOUND, a directory that is not empty EXPORT_DIR_NOT_EMPTY or not there EXPORT_DIR_NOT_FOUND), or a
connection error.`,
  options: { tenant: { type: "string" }, out: { type: "string" }, verify: { type: "string" } },
  positionals: [],
  needsFirestore: (values) => modeOf(values).kind === "export",
  validate({ values }) {
    modeOf(values);
  },
  async run({ values, json }) {
    const mode = modeOf(values);
    if (mode.kind === "verify") {
      const r = await verifyExportDir(mode.dir);
      if (json) writeJson(r);
      else {
        const parts: string[] = [];
        if (r.findings.length > 0) parts.push(table(["PROBLEM", "FILE", "DETAIL"], r.findings.map((f) => [f.problem, f.file ?? "-", f.detail])), "");
        parts.push(
          keyValues([
            ["result", r.ok ? "OK: the export verifies" : `FAILED: ${r.findings.length} problem(s)`],
            ["tenant", r.manifest?.tenantId ?? null],
            ["files", r.manifest?.files.length ?? null],
            ["documents", r.manifest?.documents ?? null],
            ["sha256", r.manifest?.sha256 ?? null],
          ]),
        );
        writeOut(parts.join("\n"));
      }
      return r.ok ? EXIT.ok : EXIT.findings;
    }
    await resolveTenantSubject(mode.tenantId);
    const manifest = await exportTenant({ tenantId: mode.tenantId, outDir: mode.outDir, nowMs: Date.now() });
    if (json) writeJson({ dir: mode.outDir, ...manifest });
    else {
      writeOut(
        [
          table(["FILE", "DOCUMENTS", "BYTES", "SHA-256"], manifest.files.map((f) => [f.file, f.documents, f.bytes, f.sha256])),
          "",
          keyValues([
            ["tenant", manifest.tenantId],
            ["directory", mode.outDir],
            ["documents", manifest.documents],
            ["policy version", manifest.policyVersion],
            ["sha256 (whole set)", manifest.sha256],
          ]),
        ].join("\n"),
      );
    }
    return EXIT.ok;
  },
};
