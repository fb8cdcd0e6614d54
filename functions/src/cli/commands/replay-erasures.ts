import { randomUUID } from "node:crypto";
import { replayErasures } from "../../restore/index";
import { settings } from "../../platform/settings";
import { EXIT, stringOpt, type Command } from "../command";
import { registryPolicy } from "../../platform/registry";
import { keyValues, table, writeJson, writeOut } from "../output";
import { operatorOf } from "../operator";
import { scopeWord } from "../scope";
import { UsageError } from "../target";

export const replayErasuresCommand: Command = {
  name: "replay-erasures",
  summary: "After a restore: erase again every subject the erasure ledger says was erased",
  usage: "retention replay-erasures --database <restored-db-id> [--of <database>] [--apply] [--as <uid>] [--json]",
  details: `Reads the erasure ledger (its own database, RETENTION_LEDGER_DATABASE_ID), finds every user and tenant in
the restored database --database whose keyed hash the ledger holds, and plans what the purge would still
delete or mask for each, its Cloud Storage objects included (listed in the buckets as they are now: an object back
from a bucket restore or soft delete is erased again). Subjects are found by the ids the database's documents and the
buckets' paths carry. A dry run by default: it prints that and writes nothing. With --apply each subject
with something left is erased again through the normal purge, under its original request id: deletes,
masks, external copies, the restored database's holds, the brake, and evidence in that database's chain.
A subject with nothing left is reported and left alone, so running it again changes nothing.
Erased tenants found back with data are listed as "tenants back".

Under a registry with several governed databases, --of names the governed database (logical name) the restored
copy is a copy of (default: the primary): the copy is put right with that database's part of the registry and its
own erasure-ledger entries (each database of a request records its own).

Options:
  --database <id>   the restored database (required; never the ledger's database)
  --of <database>   which governed database it is a copy of (logical name; default the primary)
  --apply           carry the erasures out (default: dry run)
  --as <uid>        the operator to record (emulators only)
  --json            machine-readable output: the report (databaseId, applied, ledgerEntries, subjects[] (with
                    toDelete, toMask, toDeleteObjects), tenantsBack[], toErase, problems)

Exit: 0 nothing left to erase (dry run) or every erasure done (--apply); 1 a dry run found subjects to
erase, or a subject could not be erased (blocked plan, closed request, brake, unfinished purge);
2 usage or connection error.`,
  options: { apply: { type: "boolean" }, as: { type: "string" }, of: { type: "string" } },
  positionals: [],
  needsFirestore: true,
  validate({ values, target }) {
    if (typeof values.database !== "string" || values.database === "") throw new UsageError("replay-erasures needs --database <restored-db-id>: the restored copy to put right.");
    if (values.database === settings.ledgerDatabaseId()) throw new UsageError(`--database ${values.database} is the erasure ledger's database (RETENTION_LEDGER_DATABASE_ID), not a restored copy.`);
    if (values.as !== undefined && !target.emulator) throw new UsageError("--as is accepted only on the emulators: on a project the operator is the Application Default Credentials' account.");
    const of = stringOpt(values, "of");
    if (of !== undefined && !registryPolicy().hasCell(of)) throw new UsageError(`--of ${of}: the registry governs no database by that name (${registryPolicy().cells().join(", ")}).`);
    if (target.cell !== null) throw new UsageError(`--database ${String(values.database)} is a governed database, not a restored copy: name the copy with --database and the database it copies with --of.`);
  },
  async run({ values, json, target }) {
    const operator = await operatorOf(values, target);
    const apply = values.apply === true;
    const of = stringOpt(values, "of");
    const report = await replayErasures({ databaseId: target.databaseId, ...(of !== undefined ? { cell: of } : {}), apply, actor: operator.actor, nowMs: Date.now(), correlationId: randomUUID() });
    if (json) {
      writeJson(report);
    } else {
      const parts: string[] = [];
      const word = scopeWord();
      if (report.subjects.length > 0) {
        parts.push(
          table(
            ["SUBJECT", "REQUEST", "DELETE", "MASK", "OBJECTS", "HELD", "ACTION", "OUTCOME"],
            report.subjects.map((s) => [
              s.kind === "user" ? `user ${s.uid ?? "?"}${s.tenantId ? ` (${word} ${s.tenantId}${s.scopedOnly ? ", its part only" : ""})` : ""}` : `${word} ${s.tenantId}`,
              s.requestId,
              s.toDelete,
              s.toMask,
              s.toDeleteObjects,
              s.underHold,
              apply ? s.action : s.action === "erase" ? "would erase" : s.action,
              s.outcome ?? "-",
            ]),
          ),
          "",
        );
      }
      parts.push(
        keyValues([
          ["database", report.databaseId],
          ...(registryPolicy().cells().length > 1 ? [["a copy of", report.cell] as [string, string]] : []),
          ["mode", apply ? "applied" : "dry run (nothing written; --apply to erase)"],
          ["ledger entries", report.ledgerEntries],
          ["erased subjects found", report.subjects.length],
          [apply ? "erased again" : "to erase", report.toErase],
          [`${word}s back`, report.tenantsBack.length > 0 ? report.tenantsBack.join(", ") : "none"],
          ["problems", report.problems],
        ]),
      );
      writeOut(parts.join("\n"));
    }
    if (report.problems > 0) return EXIT.findings;
    return !apply && report.toErase > 0 ? EXIT.findings : EXIT.ok;
  },
};
