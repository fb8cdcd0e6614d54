import { exportEvidence, explainEvidence, verifyEvidence, type AnchorSource, type BundleManifest, type EvidenceVerification, type ExplainOptions, type ExplainQuery, type ExplainResult, type VerifyOptions } from "../evidence/index";
import { decodeCursor, encodeCursor } from "../kernel/paging";
import { PRIMARY_CELL } from "../kernel/policy";
import { inCell } from "../platform/firestore";
import { registryPolicy } from "../platform/registry";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { cellsToVisit, inEveryCell } from "./jobs";

/**
 * The evidence of several governed databases: each database's ledger is its own (its chains, heads, anchors and
 * evidence key are those of every cell alike), verified, exported and explained database by database.
 */

/** Where a bundle of several databases keeps each other database's bundle: `<out>/databases/<name>/`. */
export const CELL_BUNDLES_DIR = "databases";

/** Verifies the ledger of every governed database (or the one named): each verification as in one database. */
export function verifyAcrossCells(opts: VerifyOptions, only?: string | null): Promise<Record<string, EvidenceVerification>> {
  return inEveryCell(() => verifyEvidence(opts), only);
}

/**
 * Exports the ledger of every governed database: the primary's bundle at `outDir` (exactly the bundle of one
 * database), each other database's under `outDir/databases/<name>/`, each a complete bundle of its own (manifest,
 * chains, heads, anchors of that database).
 */
export async function exportAcrossCells(outDir: string, opts: { anchors: AnchorSource; pageSize?: number; onProgress?: (entries: number) => void }, only?: string | null): Promise<Record<string, { dir: string; manifest: BundleManifest }>> {
  const out: Record<string, { dir: string; manifest: BundleManifest }> = {};
  for (const cell of cellsToVisit(only)) {
    const dir = only !== undefined && only !== null ? outDir : bundleDirOf(outDir, cell);
    out[cell] = { dir, manifest: await inCell(cell, () => exportEvidence(dir, opts)) };
  }
  return out;
}

/** A database's bundle within a bundle of several: the primary's at the root, another's under databases/<name>. */
export const bundleDirOf = (outDir: string, cell: string): string => (cell === PRIMARY_CELL ? outDir : join(outDir, CELL_BUNDLES_DIR, cell));

/** The bundles in a directory: its own (the primary's, or one database's), and each other database's beside it. */
export function bundlesIn(dir: string): { cell: string; dir: string }[] {
  const nested = join(dir, CELL_BUNDLES_DIR);
  const others = existsSync(nested)
    ? readdirSync(nested, { withFileTypes: true })
        .filter((d) => d.isDirectory() && existsSync(join(nested, d.name, "manifest.json")))
        .map((d) => ({ cell: d.name, dir: join(nested, d.name) }))
        .sort((a, b) => (a.cell < b.cell ? -1 : 1))
    : [];
  return [{ cell: PRIMARY_CELL, dir }, ...others];
}

/** An explanation whose entries may each name the governed database whose ledger holds them. */
export type ExplainAcrossCells = Omit<ExplainResult, "entries"> & { entries: (ExplainResult["entries"][number] & { database?: string })[] };

/**
 * "Why was this deleted?" across governed databases: the entries of each database in turn (or the one named),
 * each marked with its database, paged database by database (a cursor names the database and its position there).
 * A path lives in one database, a request and a subject may have entries in several.
 */
export async function explainAcrossCells(q: ExplainQuery, opts: ExplainOptions & { database?: string }): Promise<ExplainAcrossCells> {
  const cells = cellsToVisit(opts.database);
  if (registryPolicy().cells().length === 1) return explainEvidence(q, opts);
  const list = `explain-cells:${q.kind}:${q.value}:${opts.database ?? "*"}`;
  const [at, first] = opts.cursor === undefined ? [0, null] : decodeCursor(list, opts.cursor, 2);
  let inner = first;
  let index = Number(at);
  if (!Number.isInteger(index) || index < 0 || index >= cells.length) index = 0;
  for (;;) {
    const cell = cells[index]!;
    const r = await inCell(cell, () => explainEvidence(q, { ...opts, cursor: typeof inner === "string" ? inner : undefined }));
    const last = index === cells.length - 1;
    const nextCursor = r.nextCursor !== null ? encodeCursor(list, [index, r.nextCursor]) : last ? null : encodeCursor(list, [index + 1, null]);
    // A database with nothing to show passes the turn to the next one in the same call.
    if (r.entries.length === 0 && !last && r.nextCursor === null) {
      index++;
      inner = null;
      continue;
    }
    return { ...r, nextCursor, entries: r.entries.map((e) => ({ ...e, database: cell })), summary: r.summary.map((line) => `${cell}: ${line}`) };
  }
}
