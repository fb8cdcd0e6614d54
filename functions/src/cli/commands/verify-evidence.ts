import { bundleLedger, readBundle, verifyLedger, type EvidenceVerification } from "../../evidence/index";
import { bundlesIn, verifyAcrossCells } from "../../cells/index";
import { registryPolicy } from "../../platform/registry";
import { EXIT, positiveIntOpt, stringOpt, type Command } from "../command";
import { progressLine, writeJson, writeOut } from "../output";
import { UsageError } from "../target";
import { anchorMaxAgeOption, anchorsOption, EVIDENCE_OPTIONS, EVIDENCE_OPTIONS_HELP, keysOption, renderVerification } from "./evidence-shared";

export const verifyEvidenceCommand: Command = {
  name: "verify-evidence",
  summary: "Verify the evidence ledger (every chain, head, MAC, anchor and seal), live or from an exported bundle",
  usage: "retention verify-evidence [--anchors <path> | --without-anchors] [--without-key] [--anchor-max-age <minutes>] [--bundle <dir>] [--json]",
  details: `Walks deletionAudits chain by chain in seq order and checks, for every entry: its hash (EDITED), its
link to the entry before (BROKEN_LINK), its seq and document id (REMOVED for a gap, INSERTED for a repeat or a
foreign document), and its MAC under the evidence key (UNSIGNED, BAD_MAC: written or re-hashed without the key;
UNKNOWN_KEY). Every chain's head must name its last entry (REMOVED, HEAD_MISMATCH). Every anchored head and every
seal of the legacy segment must still be in the ledger with the hash it had: ANCHOR_MISMATCH (rewritten since),
TRUNCATED (cut short, with its head rewound), SEGMENT_MISSING (a whole chain deleted), LEDGER_WIPED (no entries,
while anchors say there was evidence); BAD_ANCHOR for an anchor that does not verify. MALFORMED names every
entry, head or anchor that is not one (wrong types, NaN, missing fields), and the walk goes on past it.
UNATTESTED_SEGMENT: a legacy segment the ledger's signed migration entry does not name. ANCHOR_STALE: the newest
anchor is older than --anchor-max-age (default twice the anchor schedule): the output says how many chains and
entries are newer than their last anchor. Read-only.

With --bundle <dir> it verifies an export of export-evidence offline, with no database: its anchors are the
ones --anchors names, else the copy in the bundle.

Under a registry with several governed databases it verifies every database's ledger (and, with --bundle, every
database's bundle in the export: databases/<name>/ beside the primary's); --database narrows to one. --json then
prints {ok, databases: {<name>: verification}}.

Options:
  --bundle <dir>      verify an exported bundle instead of the database
${EVIDENCE_OPTIONS_HELP}
  --json              machine-readable output

Exit: 0 the ledger verifies, 1 it does not, 2 usage or connection error (or no key and no --without-key).`,
  options: { ...EVIDENCE_OPTIONS, bundle: { type: "string" } },
  positionals: [],
  needsFirestore: (values) => values.bundle === undefined,
  validate({ values, target }) {
    // Before any connection: a missing key or missing anchors is a usage error, not a slow failure.
    keysOption(values);
    if (values.bundle === undefined) anchorsOption(values, target);
  },
  async run({ values, json, target }) {
    const progress = progressLine();
    const common = {
      pageSize: positiveIntOpt(values, "page-size", 500),
      keys: keysOption(values),
      onProgress: (n: number) => progress.update(`verifying evidence: ${n} entries`),
    };
    const bundleDir = stringOpt(values, "bundle");
    // Every governed database's ledger, each verified as one database's is (--database narrows to one); under a
    // registry with one database the output is that database's verification as it always was.
    const results: Record<string, EvidenceVerification> = {};
    if (bundleDir !== undefined) {
      // Offline there is no target: --database names a database's bundle in the export by its logical name.
      const only = stringOpt(values, "database");
      const bundles = bundlesIn(bundleDir).filter((b) => only === undefined || b.cell === only);
      if (bundles.length === 0) throw new UsageError(`--bundle ${bundleDir} holds no bundle of database ${only ?? "?"} (databases/<name>/ beside the primary's).`);
      for (const b of bundles) {
        let manifest;
        try {
          manifest = readBundle(b.dir);
        } catch (err) {
          throw new UsageError(`--bundle ${b.dir}: ${err instanceof Error ? err.message : String(err)}`);
        }
        const own = manifest.anchors ? { kind: "path" as const, path: `${b.dir}/anchors.jsonl` } : null;
        const anchors = anchorsOption(values, null, own);
        const staleAfterMs = anchorMaxAgeOption(values, anchors);
        results[b.cell] = await verifyLedger(bundleLedger(b.dir), {
          ...common,
          anchors,
          ...(staleAfterMs !== undefined ? { staleAfterMs } : {}),
          ledger: { projectId: manifest.projectId, databaseId: manifest.databaseId },
          anchorsUntilMs: manifest.cutAtMs,
        });
      }
    } else {
      const anchors = anchorsOption(values, target);
      const staleAfterMs = anchorMaxAgeOption(values, anchors);
      Object.assign(results, await verifyAcrossCells({ ...common, anchors, ...(staleAfterMs !== undefined ? { staleAfterMs } : {}) }, target.cell));
    }
    progress.done();
    const names = Object.keys(results);
    const ok = names.every((n) => results[n]!.ok);
    const what = bundleDir !== undefined ? "the bundle" : "the ledger";
    if (names.length === 1 && registryPolicy().cells().length === 1) {
      const r = results[names[0]!]!;
      if (json) writeJson(r);
      else writeOut(renderVerification(r, what));
    } else if (json) writeJson({ ok, databases: results });
    else writeOut(names.map((n) => `== database ${n}\n${renderVerification(results[n]!, `${what} of ${n}`)}`).join("\n\n"));
    return ok ? EXIT.ok : EXIT.findings;
  },
};
