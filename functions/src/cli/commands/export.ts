import { resolve } from "node:path";
import { exportTenant, verifyExportDir } from "../../export/index";
import { resolveTenantSubject } from "../../requests/index";
import { EXIT, stringOpt, type Command, type OptionValues } from "../command";
import { keyValues, table, writeJson, writeOut } from "../output";
import { SCOPE_OPTIONS, scopeOpt, scopeWord } from "../scope";
import { UsageError } from "../target";

type Mode = { kind: "export"; tenantId: string; outDir: string } | { kind: "verify"; dir: string };

function modeOf(values: OptionValues): Mode {
  const tenantId = scopeOpt(values);
  const out = stringOpt(values, "out");
  const verify = stringOpt(values, "verify");
  if (verify !== undefined) {
    if (tenantId !== undefined || out !== undefined) throw new UsageError("--verify <dir> takes no --scope or --out.");
    if (verify === "") throw new UsageError("--verify needs a directory.");
    return { kind: "verify", dir: resolve(verify) };
  }
  if (tenantId === undefined || out === undefined) throw new UsageError(`export needs --scope <id> (a ${scopeWord()}) and --out <dir> (or --verify <dir>).`);
  if (out === "") throw new UsageError("--out needs a directory.");
  return { kind: "export", tenantId, outDir: resolve(out) };
}

export const exportCommand: Command = {
  name: "export",
  summary: "Export a scope's data (a tenant's) for the customer (--scope --out), or verify an export (--verify)",
  usage: "retention export (--scope <id> --out <dir> | --verify <dir>) [--json]",
  details: `--scope <id> --out <dir> writes the data of a scope (the registry's scope kind: a tenant, a workspace):
every document of its closure's data map (for AtlasMart's tenants: the tenant's tree, its directory entries,
activity, sessions, events and audit records), whatever their lifecycle state, as JSON
Lines, one file per collection (named after the collection pattern: workspaces.docs.jsonl, ...): each line is one document's
path and business data in canonical JSON, Timestamps as {"$timestamp": ISO-8601}. manifest.json lists every
file with its SHA-256, size and document count, and the SHA-256 of the whole set. The directory must be new or
empty. Read-only on Firestore.

--verify <dir> checks an export directory without Firestore: the manifest parses, every listed file is there
with its recorded SHA-256, size and document count, no unlisted .jsonl file lies beside them, and the set hash
matches the list. Problems: MANIFEST_INVALID, FILE_MISSING, FILE_CHANGED, FILE_UNLISTED, SET_HASH_MISMATCH.

Options:
  --scope <id>     the scope to export (--tenant is its alias)
  --out <dir>      where to write (created; must be empty)
  --verify <dir>   verify an export directory instead
  --json           machine-readable output (the manifest, or the verification)

Exit: 0 exported, or the export verifies; 1 it does not verify; 2 usage error (unknown scope
SUBJECT_NOT_FOUND, an app without a scope kind NO_SCOPE_KIND, a directory that is not empty EXPORT_DIR_NOT_EMPTY or not there EXPORT_DIR_NOT_FOUND), or a
connection error.`,
  options: { ...SCOPE_OPTIONS, out: { type: "string" }, verify: { type: "string" } },
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
            [scopeWord(), r.manifest?.tenantId ?? null],
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
            [scopeWord(), manifest.tenantId],
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
