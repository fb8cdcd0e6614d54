import { resolve } from "node:path";
import { exportSubject, verifyExportDir } from "../../export/index";
import type { ExportManifest } from "../../export/index";
import { subjectsOf, type SubjectRef } from "../../requests/index";
import { EXIT, stringOpt, type Command, type OptionValues } from "../command";
import { keyValues, table, writeJson, writeOut } from "../output";
import { SCOPE_OPTIONS, scopeOpt, scopeWord } from "../scope";
import { UsageError } from "../target";
import { userFrom } from "./plan";

/** Whose data: a scope (`--scope` alone), or a user (`--subject`, in `--scope`, else in every scope the registry finds). */
type Mode = { kind: "export"; ref: SubjectRef; outDir: string } | { kind: "verify"; dir: string };

function modeOf(values: OptionValues): Mode {
  const scope = scopeOpt(values);
  const uid = stringOpt(values, "subject");
  const out = stringOpt(values, "out");
  const verify = stringOpt(values, "verify");
  if (verify !== undefined) {
    if (scope !== undefined || uid !== undefined || out !== undefined) throw new UsageError("--verify <dir> takes no --subject, --scope or --out.");
    if (verify === "") throw new UsageError("--verify needs a directory.");
    return { kind: "verify", dir: resolve(verify) };
  }
  if ((scope === undefined && uid === undefined) || out === undefined) throw new UsageError(`export needs --subject <uid> or --scope <id> (a ${scopeWord()}), and --out <dir> (or --verify <dir>).`);
  if (out === "") throw new UsageError("--out needs a directory.");
  const ref: SubjectRef = uid !== undefined ? { type: "user", uid: userFrom(uid), ...(scope !== undefined ? { scope } : {}) } : { type: "scope", id: scope! };
  return { kind: "export", ref, outDir: resolve(out) };
}

/** A user's export, in words: the user, in their scope or in each of their scopes. */
function ownerText(s: NonNullable<ExportManifest["subject"]>): string {
  const word = scopeWord();
  if (s.scopes) return `${s.uid} in ${s.scopes.length} ${word}s (${s.scopes.join(", ")})`;
  return `${s.uid}${s.tenantId ? ` in ${word} ${s.tenantId}` : ""}`;
}

export const exportCommand: Command = {
  name: "export",
  summary: "Export a subject's data (--subject or --scope, --out), or verify an export (--verify)",
  usage: "retention export (--subject <uid> [--scope <id>] | --scope <id>) --out <dir> | --verify <dir> [--json]",
  details: `--scope <id> --out <dir> writes the data of a scope (the registry's scope kind: a tenant, a workspace):
every document of its closure's data map (for AtlasMart's tenants: the tenant's tree, its directory entries,
activity, sessions, events and audit records), whatever their lifecycle state, as JSON
Lines, one file per collection (named after the collection pattern: workspaces.docs.jsonl, ...): each line is one document's
path and business data in canonical JSON, Timestamps as {"$timestamp": ISO-8601}. --subject <uid> writes a user's
data the same way (every document of the user's data map). Every Cloud Storage object the data map's storage entries
reach is written under objects/ (its bytes, as they are). manifest.json lists every file with its SHA-256, size and
document count, every object with its file, bucket, name, generation, size and SHA-256, and the SHA-256 of the whole
set; a tenant's manifest names the tenant (tenantId), a user's the subject. The directory must be new or empty.
Read-only on Firestore and Cloud Storage.

--verify <dir> checks an export directory without Firestore: the manifest parses, every listed file is there
with its recorded SHA-256, size and document count, no unlisted .jsonl file lies beside them, every listed object
is in objects/ with its SHA-256 and size and nothing unlisted is there, and the set hash matches the lists.
Problems: MANIFEST_INVALID, FILE_MISSING, FILE_CHANGED, FILE_UNLISTED, OBJECT_MISSING, OBJECT_CHANGED,
OBJECT_UNLISTED, SET_HASH_MISMATCH.

Options:
  --subject <uid>  the user to export; with --scope, in that scope, else in every scope the registry's lookups
                   find (a user in several: one export of them all, as the request group their erasure opens)
  --scope <id>     the scope to export (alone), or the user's scope (--tenant is its alias)
  --out <dir>      where to write (created; must be empty)
  --verify <dir>   verify an export directory instead
  --json           machine-readable output (the manifest, or the verification)

Exit: 0 exported, or the export verifies; 1 it does not verify; 2 usage error (unknown scope or user
SUBJECT_NOT_FOUND, an app without a scope kind NO_SCOPE_KIND, a user in more scopes than a group may have
TOO_MANY_SCOPES, a directory that is not empty EXPORT_DIR_NOT_EMPTY or not there EXPORT_DIR_NOT_FOUND), or a
connection error.`,
  options: { subject: { type: "string" }, ...SCOPE_OPTIONS, out: { type: "string" }, verify: { type: "string" } },
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
            [r.manifest?.subject ? "user" : scopeWord(), r.manifest?.subject ? ownerText(r.manifest.subject) : (r.manifest?.tenantId ?? null)],
            ["files", r.manifest?.files.length ?? null],
            ["documents", r.manifest?.documents ?? null],
            ["objects", r.manifest?.objects?.length ?? 0],
            ["sha256", r.manifest?.sha256 ?? null],
          ]),
        );
        writeOut(parts.join("\n"));
      }
      return r.ok ? EXIT.ok : EXIT.findings;
    }
    // A scope must exist; a user's scopes are found by the registry's lookups unless named (several: one export of all).
    const subjects = await subjectsOf(mode.ref);
    const manifest = await exportSubject({ subject: subjects, outDir: mode.outDir, nowMs: Date.now() });
    if (json) writeJson({ dir: mode.outDir, ...manifest });
    else {
      writeOut(
        [
          table(["FILE", "DOCUMENTS", "BYTES", "SHA-256"], manifest.files.map((f) => [f.file, f.documents, f.bytes, f.sha256])),
          "",
          ...((manifest.objects ?? []).length > 0 ? [table(["OBJECT FILE", "OBJECT", "BYTES", "SHA-256"], (manifest.objects ?? []).map((o) => [o.file, `gs://${o.bucket}/${o.name}#${o.generation}`, o.bytes, o.sha256])), ""] : []),
          keyValues([
            manifest.subject ? ["user", ownerText(manifest.subject)] : [scopeWord(), manifest.tenantId ?? null],
            ["directory", mode.outDir],
            ["documents", manifest.documents],
            ["objects", manifest.objects?.length ?? 0],
            ["policy version", manifest.policyVersion],
            ["sha256 (whole set)", manifest.sha256],
          ]),
        ].join("\n"),
      );
    }
    return EXIT.ok;
  },
};
