import { applyEdits, findNodeAtLocation, getNodeValue, modify, parseTree, printParseErrorCode, type Node, type ParseError } from "jsonc-parser";
import type { CompositeIndexConfig, FieldOverrideConfig, FieldOverrideIndexConfig, IndexConfig } from "../../indexes/rules";
import { checkQuery } from "../../indexes/rules";
import type { PolicyIndex } from "../../kernel/policy";
import { CONTROL_PLANE_INDEXES, CONTROL_PLANE_OVERRIDES, registryQueries, ttlOverrides } from "./indexes";

/**
 * The retention part of an app's firestore.indexes.json, between marker comments at the end of its `indexes` and
 * `fieldOverrides` arrays. firebase-tools reads the file as JSON with comments (cjson), so the markers are comments,
 * as in firestore.rules. Everything outside them is the app's and is never changed, except for the comma its last
 * entry needs before the block. Pure: text in, text out.
 */
export const INDEXES_BEGIN = "// <retention:begin>";
export const INDEXES_END = "// <retention:end>";
const BEGIN_LINE = `${INDEXES_BEGIN} written by \`retention setup\` from the policy registry: change the registry, not these lines`;

/** The file cannot be read as an index file, or its markers are out of place: nothing is written. */
export class IndexFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "IndexFileError";
  }
}

type Key = "indexes" | "fieldOverrides";
const KEYS: readonly Key[] = ["indexes", "fieldOverrides"];

interface ArrayPart {
  key: Key;
  node: Node;
  /** The app's entries (outside the markers) and the block's current entries. */
  app: unknown[];
  ours: unknown[];
  /** Offsets of the marker lines (start of the begin line, end of the end line), when present. */
  markers: { start: number; end: number } | null;
}

const lineStart = (text: string, at: number): number => text.lastIndexOf("\n", at - 1) + 1;
const lineEnd = (text: string, at: number): number => {
  const i = text.indexOf("\n", at);
  return i < 0 ? text.length : i;
};

function parse(text: string, name: string): Node {
  const errors: ParseError[] = [];
  const root = parseTree(text, errors, { allowTrailingComma: false, disallowComments: false });
  if (errors.length > 0 || !root) {
    const e = errors[0];
    throw new IndexFileError(`${name} is not valid JSON${e ? ` (${printParseErrorCode(e.error)} at offset ${e.offset})` : ""}: nothing was written.`);
  }
  if (root.type !== "object") throw new IndexFileError(`${name} must hold a JSON object with "indexes" and "fieldOverrides": nothing was written.`);
  return root;
}

/** One array's markers and entries, checked: both markers or none, in order, and nothing of the app's after the end. */
function readArray(text: string, root: Node, key: Key, name: string): ArrayPart | null {
  const node = findNodeAtLocation(root, [key]);
  if (!node) return null;
  if (node.type !== "array") throw new IndexFileError(`${name}: "${key}" must be an array: nothing was written.`);
  const body = text.slice(node.offset, node.offset + node.length);
  const find = (marker: string): number[] => {
    const out: number[] = [];
    for (let i = body.indexOf(marker); i >= 0; i = body.indexOf(marker, i + 1)) out.push(node.offset + i);
    return out;
  };
  const begins = find(INDEXES_BEGIN);
  const ends = find(INDEXES_END);
  const elements = node.children ?? [];
  if (begins.length === 0 && ends.length === 0) return { key, node, app: elements.map(getNodeValue), ours: [], markers: null };
  if (begins.length !== 1 || ends.length !== 1 || ends[0]! < begins[0]!) {
    throw new IndexFileError(`${name}: "${key}" needs exactly one ${INDEXES_BEGIN} line followed by one ${INDEXES_END} line (or neither): nothing was written.`);
  }
  const start = lineStart(text, begins[0]!);
  const end = lineEnd(text, ends[0]!);
  if (elements.some((e) => e.offset > end)) {
    throw new IndexFileError(`${name}: "${key}" has entries after ${INDEXES_END}; the retention block is the array's last part, so move them above ${INDEXES_BEGIN}: nothing was written.`);
  }
  const inside = (e: Node) => e.offset > start && e.offset < end;
  return { key, node, app: elements.filter((e) => !inside(e)).map(getNodeValue), ours: elements.filter(inside).map(getNodeValue), markers: { start, end } };
}

const overrideKey = (o: { collectionGroup: string; fieldPath: string }) => `${o.collectionGroup}\u0000${o.fieldPath}`;
const indexKey = (i: CompositeIndexConfig) => JSON.stringify({ c: i.collectionGroup, q: i.queryScope ?? "COLLECTION", f: i.fields });
const modeKey = (i: FieldOverrideIndexConfig) => `${i.order ?? i.arrayConfig}@${i.queryScope ?? "COLLECTION"}`;

/** What the block must hold given the app's own entries, and where an app entry stands in the way. */
export interface IndexBlock {
  indexes: CompositeIndexConfig[];
  fieldOverrides: FieldOverrideConfig[];
  /** App overrides of a field the registry needs differently: the app must change them (nothing is written). */
  conflicts: string[];
}

/**
 * The block's entries for `policy`: the control plane's indexes, the TTL policies and what each registry query needs,
 * judged with the app's own entries in place (an app index that already serves a query makes the block's
 * unnecessary). An app override of a field the registry needs is the app's to change: when it lacks an index or the
 * TTL policy the registry needs, that is a conflict, reported with what to add.
 */
export function indexBlock(policy: PolicyIndex, app: Required<IndexConfig>, database: string = "(default)"): IndexBlock {
  const appOverrides = new Map(app.fieldOverrides.map((o) => [overrideKey(o), o]));
  const conflicts: string[] = [];
  const config: Required<IndexConfig> = { indexes: [...app.indexes], fieldOverrides: [...app.fieldOverrides] };
  const ours: Required<IndexConfig> = { indexes: [], fieldOverrides: [] };
  const appIndexes = new Set(app.indexes.map(indexKey));
  for (const i of CONTROL_PLANE_INDEXES) {
    if (appIndexes.has(indexKey(i))) continue;
    config.indexes.push(i);
    ours.indexes.push(i);
  }
  const needOverride = (o: FieldOverrideConfig, why: string) => {
    const own = appOverrides.get(overrideKey(o));
    if (own) {
      const has = new Set((own.indexes ?? []).map(modeKey));
      const missing = (o.indexes ?? []).filter((i) => !has.has(modeKey(i)));
      const ttlMissing = o.ttl === true && own.ttl !== true;
      if (missing.length > 0 || ttlMissing) {
        conflicts.push(
          `the app's fieldOverrides entry for ${o.collectionGroup}.${o.fieldPath} must ${[ttlMissing ? `say "ttl": true` : "", missing.length > 0 ? `also list ${JSON.stringify(missing)}` : ""].filter(Boolean).join(" and ")} (${why}); or remove it and run setup again to have it written`,
        );
      }
      return;
    }
    const at = ours.fieldOverrides.findIndex((x) => overrideKey(x) === overrideKey(o));
    if (at >= 0) ours.fieldOverrides[at] = o;
    else ours.fieldOverrides.push(o);
    const c = config.fieldOverrides.findIndex((x) => overrideKey(x) === overrideKey(o));
    if (c >= 0) config.fieldOverrides[c] = o;
    else config.fieldOverrides.push(o);
  };
  for (const o of CONTROL_PLANE_OVERRIDES) needOverride(o, "the control plane's own");
  for (const o of ttlOverrides(policy)) needOverride(o, "the registry's TTL policy for it");
  for (const { shape, why } of registryQueries(policy, database)) {
    const verdict = checkQuery(config, shape);
    if (verdict.status === "unsupported") throw new IndexFileError(`the registry asks for a query Firestore cannot serve (${why}): ${verdict.why}`);
    if (verdict.status !== "missing") continue;
    for (const p of verdict.proposals) {
      if (p.kind === "fieldOverride") needOverride(p.entry, why);
      else if (!ours.indexes.some((i) => indexKey(i) === indexKey(p.entry))) {
        ours.indexes.push(p.entry);
        config.indexes.push(p.entry);
      }
    }
  }
  return { ...ours, conflicts };
}

/** One-line JSON of a flat object, with spaces as firebase-tools' own files have them: `{ "fieldPath": "uid", "order": "ASCENDING" }`. */
const inline = (value: unknown): string => JSON.stringify(value).replace(/^\{/, "{ ").replace(/\}$/, " }").replace(/":/g, '": ').replace(/,"/g, ', "');

/** An entry as it sits in the array: one key a line, each element of its field or index list on one line. */
function render(entry: Record<string, unknown>, indent: string): string {
  const lines = Object.entries(entry).map(([k, v]) => {
    if (!Array.isArray(v)) return `${indent}  ${JSON.stringify(k)}: ${JSON.stringify(v)}`;
    if (v.length === 0) return `${indent}  ${JSON.stringify(k)}: []`;
    return `${indent}  ${JSON.stringify(k)}: [\n${v.map((x) => `${indent}    ${inline(x)}`).join(",\n")}\n${indent}  ]`;
  });
  return `${indent}{\n${lines.join(",\n")}\n${indent}}`;
}

export interface IndexFileText {
  after: string;
  block: IndexBlock;
}

/**
 * `text` (an app's index file, `name` in messages) with its retention block written for `policy`: the markers go at
 * the end of each array the first time, and what is between them is replaced afterwards. Running it on its own
 * output changes nothing. Throws IndexFileError (nothing to write) on a file it cannot read, misplaced markers, or a
 * conflict with the app's own overrides.
 */
export function spliceIndexFile(text: string, policy: PolicyIndex, name: string, database: string = "(default)"): IndexFileText {
  let current = text;
  // An array the file lacks is added empty first, so that every later step has one to write into.
  for (const key of KEYS) {
    if (!findNodeAtLocation(parse(current, name), [key])) {
      current = applyEdits(current, modify(current, [key], [], { formattingOptions: { insertSpaces: true, tabSize: 2, eol: "\n" } }));
    }
  }
  const parts = KEYS.map((k) => readArray(current, parse(current, name), k, name)!);
  const app = { indexes: parts[0]!.app as CompositeIndexConfig[], fieldOverrides: parts[1]!.app as FieldOverrideConfig[] };
  const block = indexBlock(policy, app, database);
  if (block.conflicts.length > 0) throw new IndexFileError(`${name}: ${block.conflicts.join("; ")}. Nothing was written.`);
  // Back to front, so that each edit leaves the offsets of the earlier array as they were.
  for (const part of [...parts].sort((a, b) => b.node.offset - a.node.offset)) {
    const entries = part.key === "indexes" ? block.indexes : block.fieldOverrides;
    const close = part.node.offset + part.node.length - 1;
    const closeIndent = current.slice(lineStart(current, close), close).match(/^\s*/)![0];
    const openLineIndent = current.slice(lineStart(current, part.node.offset), part.node.offset).match(/^\s*/)![0];
    const indent = `${openLineIndent}  `;
    const lines = [`${indent}${BEGIN_LINE}`, entries.map((e) => render(e as unknown as Record<string, unknown>, indent)).join(",\n"), `${indent}${INDEXES_END}`].filter((l) => l !== "");
    const blockText = lines.join("\n");
    const appNodes = (part.node.children ?? []).filter((e) => !part.markers || e.offset < part.markers.start);
    const lastApp = appNodes.at(-1);
    if (part.markers) {
      current = `${current.slice(0, part.markers.start)}${blockText}${current.slice(part.markers.end)}`;
    } else {
      const before = current.slice(0, close).replace(/\s*$/, "");
      current = `${before}\n${blockText}\n${closeIndent}${current.slice(close)}`;
    }
    // The app's last entry needs a comma before the block (there is always at least the control plane's part).
    if (lastApp) {
      const afterLast = lastApp.offset + lastApp.length;
      const between = current.slice(afterLast, current.indexOf(INDEXES_BEGIN, afterLast));
      if (!between.includes(",") && entries.length > 0) current = `${current.slice(0, afterLast)},${current.slice(afterLast)}`;
      if (between.includes(",") && entries.length === 0) current = `${current.slice(0, afterLast)}${current.slice(afterLast).replace(",", "")}`;
    }
  }
  parse(current, name);
  return { after: current, block };
}
