import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { DEFAULT_BUCKET_SAMPLE, DEFAULT_SAMPLE, DEFAULT_THRESHOLDS, discoverDraft, type DiscoverDraft } from "../../discover/index";
import { RegistrySchema } from "../../kernel/policy-schema";
import { EXIT, positiveIntOpt, stringOpt, type Command, type OptionValues } from "../command";
import { keyValues, progressLine, table, writeJson, writeOut } from "../output";
import { UsageError, type Target } from "../target";

export const discoverCommand: Command = {
  name: "discover",
  summary: "Draft the registry's collections and user data map from a bounded sample of the data (read-only)",
  usage: "retention discover [--sample <n>] [--depth <n>] [--bucket <name,...>] [--out <file>] [--force] [--json]",
  details: `Lists the root collections, reads a bounded sample of each (and of their subcollections), lists the
Auth uids, and proposes how erasing a user reaches each kind of document: a document keyed by the uid (doc,
recursive when it has subcollections), a collection with a uid field (query ==), a subcollection id whose
documents carry a uid field (collectionGroup ==), an array of uids (array-contains, removeFromArray). It also samples
the project's default bucket and every --bucket (their top-level folders, and a bounded number of object names under
each: no bytes are read) and proposes a storage entry for a folder of the paths that is an Auth uid (users/{uid}/),
with a heldWith document to review. Buckets belong to no database: under --database <another governed database>
they are not sampled (a storage entry goes with the database of its heldWith document). Every
proposal carries its numbers; what it could not classify is listed. Every collection gets the draft-only class
"unreviewed", which the registry check refuses to publish. Writes the draft file; never writes to the database.
Reads at most max-collections x sample documents, and as many listCollections calls plus one (docs/DISCOVER.md).

Options:
  --sample <n>           documents per collection path, spread over its parents (default ${DEFAULT_SAMPLE.perCollection})
  --depth <n>            collection levels followed (default ${DEFAULT_SAMPLE.depth}: a/{x}/b/{y}/c/{z}/d/{w})
  --max-collections <n>  collection paths sampled at most (default ${DEFAULT_SAMPLE.maxCollections})
  --max-users <n>        Auth accounts listed at most (default ${DEFAULT_SAMPLE.maxUsers}); beyond them, the sample's
                         uid-shaped values are looked up instead, at most --max-lookups (default ${DEFAULT_SAMPLE.maxLookups})
  --min-share <0..1>     share of sampled documents a link needs for a proposal (default ${DEFAULT_THRESHOLDS.minShare})
  --min-docs <n>         ...and at least this many documents (default ${DEFAULT_THRESHOLDS.minDocs})
  --bucket <name,...>    Cloud Storage buckets to sample besides the default bucket (at most ${DEFAULT_BUCKET_SAMPLE.maxFolders} top-level
                         folders each, ${DEFAULT_BUCKET_SAMPLE.perFolder} object names per folder)
  --out <file>           where the draft goes (default policies/drafts/<next version>.draft.json; never
                         policies/versions/, which is what gets bundled)
  --force                overwrite an existing draft file
  --json                 print the summary as JSON

Exit: 0 draft written and its registry parses; 1 draft written but no data-map entry could be proposed (the
registry needs one); 2 usage or connection error.`,
  options: {
    sample: { type: "string" },
    depth: { type: "string" },
    "max-collections": { type: "string" },
    "max-users": { type: "string" },
    "max-lookups": { type: "string" },
    "min-share": { type: "string" },
    "min-docs": { type: "string" },
    bucket: { type: "string" },
    out: { type: "string" },
    force: { type: "boolean" },
  },
  positionals: [],
  needsFirestore: true,
  validate({ values, target }) {
    optionsOf(values);
    if (target.emulator && !target.authEmulator) throw new UsageError("FIREBASE_AUTH_EMULATOR_HOST is not set: discover reads the Auth uids, so start the Auth emulator too.");
    const out = stringOpt(values, "out");
    if (out !== undefined) checkOut(resolve(out), values);
  },
  async run({ values, json, target }) {
    const opts = optionsOf(values);
    const progress = progressLine(!json && process.stderr.isTTY === true);
    const draft = await discoverDraft({
      ...opts,
      nowMs: Date.now(),
      knownVersions: versionsOnFile(),
      onProgress: (p) => progress.update(`discover: ${p.collections} collections, ${p.documents} documents read (${p.phase})`),
    });
    progress.done();
    const out = resolve(stringOpt(values, "out") ?? join("policies", "drafts", `${draft.registry.version}.draft.json`));
    checkOut(out, values);
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, `${JSON.stringify(draft, null, 2)}\n`, "utf8");
    const parsed = RegistrySchema.safeParse(draft.registry);
    const problems = parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`);
    if (json) writeJson(summaryJson(draft, out, target, problems));
    else writeOut(summaryText(draft, out, problems));
    return problems.length === 0 ? EXIT.ok : EXIT.findings;
  },
};

function optionsOf(values: OptionValues) {
  const share = stringOpt(values, "min-share");
  const minShare = share === undefined ? DEFAULT_THRESHOLDS.minShare : Number(share);
  if (!Number.isFinite(minShare) || minShare <= 0 || minShare > 1) throw new UsageError(`--min-share must be a number in (0, 1], got ${JSON.stringify(share)}.`);
  return {
    perCollection: positiveIntOpt(values, "sample", DEFAULT_SAMPLE.perCollection),
    depth: positiveIntOpt(values, "depth", DEFAULT_SAMPLE.depth),
    maxCollections: positiveIntOpt(values, "max-collections", DEFAULT_SAMPLE.maxCollections),
    maxUsers: positiveIntOpt(values, "max-users", DEFAULT_SAMPLE.maxUsers),
    maxLookups: positiveIntOpt(values, "max-lookups", DEFAULT_SAMPLE.maxLookups),
    thresholds: { minShare, minDocs: positiveIntOpt(values, "min-docs", DEFAULT_THRESHOLDS.minDocs) },
    buckets: bucketsOf(stringOpt(values, "bucket")),
  };
}

const BUCKET = /^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$/;

/** `--bucket a,b`: bucket names, each checked. */
function bucketsOf(value: string | undefined): string[] {
  if (value === undefined) return [];
  const names = value.split(",").map((b) => b.trim());
  const bad = names.find((b) => !BUCKET.test(b));
  if (bad !== undefined) throw new UsageError(`--bucket ${JSON.stringify(bad)} is not a bucket name (3 to 222 lower-case letters, digits, dots, dashes, underscores).`);
  return names;
}

/** A draft is never written where the bundler reads, and an existing one (perhaps half reviewed) only with --force. */
function checkOut(out: string, values: OptionValues): void {
  if (/(^|[\\/])policies[\\/]versions([\\/]|$)/.test(dirname(out))) throw new UsageError(`--out ${out}: policies/versions/ holds published versions only; a draft goes elsewhere (policies/drafts/).`);
  if (existsSync(out) && values.force !== true) throw new UsageError(`${out} exists (a draft someone may be reviewing): pass --force to overwrite it, or --out another file.`);
}

/** The version files in ./policies/versions, when run from a repository that has them. */
function versionsOnFile(): string[] {
  const dir = resolve("policies", "versions");
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .map((f) => /^(v[0-9]+)\.json$/.exec(f)?.[1])
    .filter((v): v is string => v !== undefined);
}

function summaryJson(d: DiscoverDraft, out: string, target: Target, problems: string[]) {
  return {
    ok: problems.length === 0,
    out,
    projectId: target.projectId,
    databaseId: target.databaseId,
    version: d.registry.version,
    basedOn: d.basedOn,
    documentsRead: d.sample.documentsRead,
    listCalls: d.sample.listCalls,
    authUsersListed: d.sample.authUsersListed,
    authTruncated: d.sample.authTruncated,
    authLookedUp: d.sample.authLookedUp,
    authFound: d.sample.authFound,
    authLookupsTruncated: d.sample.authLookupsTruncated,
    collectionsSampled: d.sample.collectionsSampled,
    collectionsNotSampled: d.sample.collectionsNotSampled,
    buckets: d.sample.buckets,
    entries: d.review.entries.map((e) => ({ entryId: e.entryId, matched: e.matched, sampled: e.sampled, evidence: e.evidence })),
    unclassified: d.review.unclassified.map((u) => ({ pattern: u.pattern, kind: u.kind, field: u.field ?? null, matched: u.matched ?? null, sampled: u.sampled })),
    fieldOverrides: d.review.indexes.fieldOverrides.length,
    problems,
  };
}

function summaryText(d: DiscoverDraft, out: string, problems: string[]): string {
  const entries = d.registry.dataMap.user;
  const parts: string[] = [];
  if (entries.length > 0) {
    parts.push(
      table(
        ["ENTRY", "KIND", "TARGET", "ACTION", "EVIDENCE"],
        d.review.entries.map((c) => {
          const e = entries.find((x) => x.id === c.entryId)!;
          const where = (e.where ?? []).map(([f, op, v]) => ` ${f} ${op} ${v}`).join("");
          const target = e.kind === "storage" ? `${e.bucket}: ${e.prefix ?? e.object ?? ""} (held with ${e.heldWith ?? "?"})` : `${e.path ?? e.collection ?? e.collectionId}${where}${e.recursive ? " (recursive)" : ""}`;
          return [c.entryId, e.kind, target, e.action, c.evidence];
        }),
      ),
      "",
    );
  }
  if (d.review.unclassified.length > 0) {
    parts.push(table(["UNCLASSIFIED", "KIND", "NUMBERS"], d.review.unclassified.map((u) => [u.pattern, `${u.kind}${u.field ? ` ${u.field}` : ""}`, `${u.matched ?? 0} of ${u.sampled}`])), "");
  }
  parts.push(
    keyValues([
      ["draft", out],
      ["result", problems.length === 0 ? `registry ${d.registry.version} drafted: review it before publishing (docs/DISCOVER.md)` : `NOT A REGISTRY YET: ${problems.join("; ")}`],
      ["documents read", d.sample.documentsRead],
      ["listCollections calls", d.sample.listCalls],
      ["collections sampled", `${d.sample.collectionsSampled}${d.sample.collectionsNotSampled.length > 0 ? ` (${d.sample.collectionsNotSampled.length} more not sampled: --max-collections)` : ""}`],
      ["buckets sampled", d.sample.buckets.map((b) => `${b.bucket}: ${b.objectsRead} object names in ${b.folders} folders${b.foldersLimited ? " (more folders exist)" : ""}`).join("; ") || "none"],
      ["Auth users listed", `${d.sample.authUsersListed}${d.sample.authTruncated ? ` (more exist: ${d.sample.authLookedUp} sampled values looked up, ${d.sample.authFound} were accounts${d.sample.authLookupsTruncated ? "; more than --max-lookups" : ""})` : ""}`],
      ["proposed entries", entries.length],
      ["unclassified", d.review.unclassified.length],
      ["index overrides to merge", d.review.indexes.fieldOverrides.length],
    ]),
  );
  return parts.join("\n");
}
