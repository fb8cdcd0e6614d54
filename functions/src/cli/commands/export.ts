import { resolve } from "node:path";
import { exportSubject, verifyExportDir } from "../../export/index";
import type { Subject } from "../../plan/rules";
import { resolveTenantSubject, resolveUserSubject } from "../../requests/index";
import { EXIT, stringOpt, type Command, type OptionValues } from "../command";
import { keyValues, table, writeJson, writeOut } from "../output";
import { UsageError } from "../target";

const ID = /^[A-Za-z0-9_-]{1,128}$/;

/** Whose data: a tenant (`--tenant` alone), a user (`--subject`, in the scope the registry finds, or in `--tenant`). */
type Whose = { kind: "tenant"; tenantId: string } | { kind: "user"; uid: string; tenantId: string | undefined };
type Mode = { kind: "export"; whose: Whose; outDir: string } | { kind: "verify"; dir: string };

function modeOf(values: OptionValues): Mode {
  const tenantId = stringOpt(values, "tenant");
  const uid = stringOpt(values, "subject");
  const out = stringOpt(values, "out");
  const verify = stringOpt(values, "verify");
  if (verify !== undefined) {
    if (tenantId !== undefined || uid !== undefined || out !== undefined) throw new UsageError("--verify <dir> takes no --subject, --tenant or --out.");
    if (verify === "") throw new UsageError("--verify needs a directory.");
    return { kind: "verify", dir: resolve(verify) };
  }
  if ((tenantId === undefined && uid === undefined) || out === undefined) throw new UsageError("export needs --subject <uid> or --tenant <id>, and --out <dir> (or --verify <dir>).");
  if (tenantId !== undefined && !ID.test(tenantId)) throw new UsageError(`--tenant ${JSON.stringify(tenantId)} is not a valid id.`);
  if (uid !== undefined && !ID.test(uid)) throw new UsageError(`--subject ${JSON.stringify(uid)} is not a valid uid.`);
  if (out === "") throw new UsageError("--out needs a directory.");
  const whose: Whose = uid !== undefined ? { kind: "user", uid, tenantId } : { kind: "tenant", tenantId: tenantId! };
  return { kind: "export", whose, outDir: resolve(out) };
}

/** The subject as the registry knows it: a tenant must exist, a user's scope is found by the registry's lookups unless named. */
async function subjectOf(w: Whose): Promise<Subject> {
  if (w.kind === "tenant") {
    await resolveTenantSubject(w.tenantId);
    return { type: "tenant", tenantId: w.tenantId };
  }
  return w.tenantId !== undefined ? { type: "user", uid: w.uid, tenantId: w.tenantId } : resolveUserSubject(w.uid);
}

export const exportCommand: Command = {
  name: "export",
  summary: "Export a subject's data (--subject or --tenant, --out), or verify an export (--verify)",
  usage: "retention export (--subject <uid> [--tenant <id>] | --tenant <id>) --out <dir> | --verify <dir> [--json]",
  details: `--tenant <id> --out <dir> writes the tenant's data (every document of its data map: the tenant's tree,
its directory entries, activity, sessions, events and audit records), whatever their lifecycle state, as JSON
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
  --subject <uid>  the user to export; with --tenant, in that tenant, else in the scope the registry's lookups find
  --tenant <id>    the tenant to export (alone), or the user's tenant
  --out <dir>      where to write (created; must be empty)
  --verify <dir>   verify an export directory instead
  --json           machine-readable output (the manifest, or the verification)

Exit: 0 exported, or the export verifies; 1 it does not verify; 2 usage error (unknown tenant or user
SUBJECT_NOT_FOUND, a directory that is not empty EXPORT_DIR_NOT_EMPTY or not there EXPORT_DIR_NOT_FOUND), or a
connection error.`,
  options: { subject: { type: "string" }, tenant: { type: "string" }, out: { type: "string" }, verify: { type: "string" } },
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
            [r.manifest?.subject ? "user" : "tenant", r.manifest?.subject?.uid ?? r.manifest?.tenantId ?? null],
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
    const subject = await subjectOf(mode.whose);
    const manifest = await exportSubject({ subject, outDir: mode.outDir, nowMs: Date.now() });
    if (json) writeJson({ dir: mode.outDir, ...manifest });
    else {
      writeOut(
        [
          table(["FILE", "DOCUMENTS", "BYTES", "SHA-256"], manifest.files.map((f) => [f.file, f.documents, f.bytes, f.sha256])),
          "",
          ...((manifest.objects ?? []).length > 0 ? [table(["OBJECT FILE", "OBJECT", "BYTES", "SHA-256"], (manifest.objects ?? []).map((o) => [o.file, `gs://${o.bucket}/${o.name}#${o.generation}`, o.bytes, o.sha256])), ""] : []),
          keyValues([
            subject.type === "tenant" ? ["tenant", subject.tenantId] : ["user", `${subject.uid}${subject.tenantId ? ` in ${subject.tenantId}` : ""}`],
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
