import { createHash } from "node:crypto";
import { createReadStream, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { ANCHOR_EVENT, HEAD_EVENT, isShardLabel, LEGACY_SEGMENT, malformedHead, parseEvidenceDocId, type ChainHead } from "./rules";
import { loadAnchors, type AnchorSource } from "./anchor-source";
import { firestoreLedger, type Item, type LedgerSource } from "./verify";
import { readHeads, type MalformedHead } from "./anchor";
import { governedDatabaseId } from "../platform/firestore";
import { settings } from "../platform/settings";

/**
 * An evidence bundle: the ledger as of one cut, in files an auditor can verify offline with read access and no
 * database (docs/EVIDENCE-LEDGER.md):
 *
 *   manifest.json        what was exported, when, from which project and database, and each file's SHA-256
 *   heads.json           every chain's head at the cut
 *   chains/<chain>.jsonl one line per entry, {"id": <document id>, "entry": <the stored entry>}, in seq order
 *                        (`legacy.jsonl` is the first release's single chain)
 *   anchors.jsonl        the anchors the exporter could read, up to the cut (a convenience: an auditor takes
 *                        the anchors from the locked bucket)
 *
 * The cut: the time is taken, then every head is read, then each chain is exported up to the head read, so
 * the bundle is a consistent prefix of every chain even while writers append.
 */
export const BUNDLE_FORMAT = "retention-evidence-bundle/1";

export interface BundleManifest {
  format: typeof BUNDLE_FORMAT;
  projectId: string;
  databaseId: string;
  /** Anchors after this time may name entries beyond the cut; a verifier of the bundle ignores them. */
  cutAtMs: number;
  exportedAt: string;
  chains: { chain: string; entries: number; head: ChainHead }[];
  /** The anchors copied into anchors.jsonl: periodic anchors (`count`) and per-append head records. */
  anchors: { source: string; count: number; headRecords: number } | null;
  keyIds: string[];
  /** SHA-256 of every other file, by its path in the bundle: the bundle arrived whole. */
  files: Record<string, string>;
}

/** Writes a bundle of the governed database's ledger into `outDir` (created; must be empty). */
export async function exportEvidence(outDir: string, opts: { anchors: AnchorSource; pageSize?: number; onProgress?: (entries: number) => void }): Promise<BundleManifest> {
  if (existsSync(outDir) && readdirSync(outDir).length > 0) throw new Error(`${outDir} is not empty`);
  mkdirSync(join(outDir, "chains"), { recursive: true });
  const cutAtMs = Date.now();
  const heads = await readHeads();
  const source = firestoreLedger();
  const files: Record<string, string> = {};
  const counts = new Map<string, number>();
  const keyIds = new Set<string>();
  let open_: { chain: string; file: FileHandle; hash: ReturnType<typeof createHash> } | null = null;
  const close = async () => {
    if (!open_) return;
    await open_.file.close();
    files[`chains/${open_.chain}.jsonl`] = open_.hash.digest("hex");
    open_ = null;
  };
  let written = 0;
  const take = async (pagesOf: AsyncIterable<Item[]>) => {
    for await (const page of pagesOf) {
      for (const { docId, entry } of page) {
        const id = parseEvidenceDocId(docId);
        // Entries past the cut belong to the next export; documents that are no entry are exported as found
        // under the chain they sort into, so the bundle's verifier reports them as the database's would.
        const chain = id?.shard ?? (docId >= "s" ? "unknown" : LEGACY_SEGMENT);
        const head = heads.get(chain);
        if (id && (!head || entry.seq > head.seq)) continue;
        if (open_?.chain !== chain) {
          await close();
          open_ = { chain, file: await open(join(outDir, "chains", `${chain}.jsonl`), "a"), hash: createHash("sha256") };
        }
        const line = `${JSON.stringify({ id: docId, entry })}\n`;
        open_.hash.update(line);
        await open_.file.write(line);
        counts.set(chain, (counts.get(chain) ?? 0) + 1);
        if (typeof entry.keyId === "string") keyIds.add(entry.keyId);
        written++;
      }
      opts.onProgress?.(written);
    }
  };
  const pageSize = opts.pageSize ?? 500;
  await take(source.shardPages(pageSize));
  await take(source.legacyPages(pageSize));
  await close();

  const put = (name: string, text: string) => {
    writeFileSync(join(outDir, name), text);
    files[name] = createHash("sha256").update(text).digest("hex");
  };
  const headsObj = Object.fromEntries([...heads].sort(([a], [b]) => (a < b ? -1 : 1)));
  put("heads.json", `${JSON.stringify(headsObj, null, 2)}\n`);
  let anchors: BundleManifest["anchors"] = null;
  if (opts.anchors.kind !== "none") {
    const loaded = await loadAnchors(opts.anchors);
    const upToCut = loaded.anchors.filter((a) => a.atMs <= cutAtMs);
    put("anchors.jsonl", upToCut.map((anchor) => `${JSON.stringify({ event: anchor.scope === "append" ? HEAD_EVENT : ANCHOR_EVENT, anchor })}\n`).join(""));
    const headRecords = upToCut.filter((a) => a.scope === "append").length;
    anchors = { source: loaded.label, count: upToCut.length - headRecords, headRecords };
  }
  const manifest: BundleManifest = {
    format: BUNDLE_FORMAT,
    projectId: settings.projectId(),
    databaseId: governedDatabaseId(),
    cutAtMs,
    exportedAt: new Date(cutAtMs).toISOString(),
    chains: [...new Set([...counts.keys(), ...heads.keys()])].sort().map((chain) => ({ chain, entries: counts.get(chain) ?? 0, head: heads.get(chain) ?? { seq: 0, hash: "" } })),
    anchors,
    keyIds: [...keyIds].sort(),
    files,
  };
  writeFileSync(join(outDir, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  return manifest;
}

/** Reads a bundle's manifest and checks that every file it lists is there with its SHA-256. */
export function readBundle(dir: string): BundleManifest {
  const manifest = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8")) as BundleManifest;
  if (manifest.format !== BUNDLE_FORMAT) throw new Error(`${dir} is not an evidence bundle (${String(manifest.format)})`);
  for (const [name, sha] of Object.entries(manifest.files)) {
    const path = join(dir, name);
    if (!existsSync(path)) throw new Error(`the bundle lists ${name}, which is missing`);
    if (createHash("sha256").update(readFileSync(path)).digest("hex") !== sha) throw new Error(`${name} does not match the SHA-256 the manifest lists`);
  }
  return manifest;
}

/** A bundle as a ledger source: the chains in the order the database lists them, with no live writers. */
export function bundleLedger(dir: string): LedgerSource {
  const chainFiles = existsSync(join(dir, "chains")) ? readdirSync(join(dir, "chains")).filter((f) => f.endsWith(".jsonl")).sort() : [];
  const lines = async function* (names: string[], pageSize: number): AsyncIterable<Item[]> {
    let page: Item[] = [];
    for (const name of names) {
      const rl = createInterface({ input: createReadStream(join(dir, "chains", name), "utf8"), crlfDelay: Infinity });
      for await (const line of rl) {
        if (line.trim().length === 0) continue;
        const { id, entry } = JSON.parse(line) as { id: string; entry: Item["entry"] };
        page.push({ docId: id, entry });
        if (page.length >= pageSize) {
          yield page;
          page = [];
        }
      }
    }
    if (page.length > 0) yield page;
  };
  const chainOf = (f: string) => f.slice(0, -".jsonl".length);
  return {
    shardPages: (pageSize) => lines(chainFiles.filter((f) => chainOf(f) !== LEGACY_SEGMENT && (isShardLabel(chainOf(f)) || chainOf(f) >= "s")), pageSize),
    legacyPages: (pageSize) => lines(chainFiles.filter((f) => chainOf(f) === LEGACY_SEGMENT), pageSize),
    heads: () => {
      const stored = JSON.parse(readFileSync(join(dir, "heads.json"), "utf8")) as Record<string, unknown>;
      const heads = new Map<string, ChainHead>();
      const malformed: MalformedHead[] = [];
      for (const [shard, head] of Object.entries(stored)) {
        const why = malformedHead(head);
        if (why) malformed.push({ docId: `heads.json#${shard}`, shard, detail: why });
        else heads.set(shard, head as ChainHead);
      }
      return Promise.resolve({ heads, malformed });
    },
  };
}
