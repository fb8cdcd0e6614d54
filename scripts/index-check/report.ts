/**
 * Turns the recorded query log into the index coverage report: which recorded queries count, whether recording
 * worked, each query's verdict under rules.ts, the unused indexes, and the text npm test prints. Pure: check.ts
 * does the reading and the exit code.
 */
import {
  checkQuery,
  describeQuery,
  mergeProposals,
  unusedIndexes,
  type CompositeIndexConfig,
  type FieldOverrideConfig,
  type IndexConfig,
  type IndexRef,
  type Proposal,
  type QueryShape,
  type UnusedEntry,
  type Verdict,
} from "../../functions/src/indexes/rules";

export interface Site {
  file: string;
  line: number;
  fn: string;
  via?: string[];
}
export interface QueryRecord extends QueryShape {
  kind: "query";
  process: string;
  site: Site | null;
}
export interface InstallRecord {
  kind: "install";
  process: string;
  pid: number;
  sdk: string;
}
export interface ErrorRecord {
  kind: "error";
  process: string;
  pid: number;
  error: string;
}
export type LogRecord = QueryRecord | InstallRecord | ErrorRecord;

/** One run's log folder (`.query-log/<label>/`) and what was in it. */
export interface LabelledLog {
  label: string;
  records: LogRecord[];
  /** Lines that were not JSON records (a torn write): recording is then not trustworthy. */
  badLines: string[];
}

/** The processes that must have recorded, or the log cannot vouch for the code they run. */
export const REQUIRED_SOURCES: { label: string; process: string; what: string; how: string }[] = [
  {
    label: "emulator",
    process: "vitest",
    what: "the in-process emulator suites",
    how: "npm run test:emulator (test/helpers/record-queries.ts, a vitest setup file)",
  },
  {
    label: "emulator",
    process: "cli",
    what: "the operator CLI, run as a child process by test/integration/cli/cli.test.ts",
    how: "npm run test:emulator (scripts/index-check/preload.cjs through NODE_OPTIONS)",
  },
  {
    label: "functions",
    process: "functions-worker",
    what: "the Functions emulator's workers (callables, triggers, task queues)",
    how: "npm run test:functions (scripts/index-check/preload.cjs through NODE_OPTIONS, passed on by firebase-tools)",
  },
];

/** Who issued a query, from the first stack frame outside dependencies. Only `test` is left out of the check. */
export type Issuer = "functions" | "cli" | "bench" | "test" | "other" | "unattributed";
export function issuerOf(site: Site | null): Issuer {
  if (site === null) return "unattributed";
  const f = site.file;
  if (f.startsWith("test/")) return "test";
  if (f.startsWith("functions/src/") || f.startsWith("functions/lib/")) return "functions";
  if (f.startsWith("bin/")) return "cli";
  if (f.startsWith("bench/")) return "bench";
  return "other";
}

export interface Finding {
  shape: QueryShape;
  databases: string[];
  sites: string[];
  processes: string[];
  issuers: Issuer[];
  verdict: Verdict;
}

export interface Report {
  /** Why the log cannot be trusted (empty, a source missing, a recorder error); any one fails the check. */
  recordingProblems: string[];
  sourceCounts: { label: string; process: string; shapes: number; processes: number }[];
  testOnlyShapes: number;
  findings: Finding[];
  failures: Finding[];
  proposals: Proposal[];
  unused: UnusedEntry[];
}

const shapeKey = (s: QueryShape): string =>
  JSON.stringify([s.scope, s.collectionId, s.where, s.orderBy, s.aggregations, s.findNearest ?? null]);

function siteText(site: Site | null): string {
  if (site === null) return "(no caller outside dependencies: checked as product code)";
  return [`${site.file}:${site.line}${site.fn ? ` ${site.fn}` : ""}`, ...(site.via ?? [])].join(" <- ");
}

/**
 * A database whose recorded queries are held to an index file of its own: an example app's, which deploys its own
 * firestore.indexes.json. `suite` is the emulator suite that runs the engine on it (it must have recorded).
 */
export interface AppDatabase {
  database: string;
  indexFile: string;
  suite: string;
}

/**
 * Splits the log by database: the queries recorded against an app's database go to that app's part, all others to
 * the product's. Install records (a process recorded) go to every part; recorder errors and torn lines to the
 * product's part alone, so that each is reported once.
 */
export function splitByDatabase(logs: readonly LabelledLog[], databases: readonly string[]): { product: LabelledLog[]; apps: Map<string, LabelledLog[]> } {
  const isApp = (r: LogRecord) => r.kind === "query" && databases.includes(r.database);
  const product = logs.map((l) => ({ ...l, records: l.records.filter((r) => !isApp(r)) }));
  const apps = new Map(
    databases.map((db) => [db, logs.map((l) => ({ label: l.label, badLines: [], records: l.records.filter((r) => r.kind === "install" || (r.kind === "query" && r.database === db)) }))]),
  );
  return { product, apps };
}

/** What an app's part of the log must hold: the queries its suite ran in the in-process emulator suites. */
export const appSources = (app: AppDatabase): typeof REQUIRED_SOURCES => [
  { label: "emulator", process: "vitest", what: `${app.suite} (the engine on database ${app.database})`, how: "npm run test:emulator (test/helpers/record-queries.ts, a vitest setup file)" },
];

/** Judges every recorded query that product code issued, and the health of the recording itself. */
export function analyse(logs: LabelledLog[], config: IndexConfig, required: typeof REQUIRED_SOURCES = REQUIRED_SOURCES): Report {
  const recordingProblems: string[] = [];
  for (const log of logs) {
    for (const line of log.badLines.slice(0, 3)) recordingProblems.push(`.query-log/${log.label}: a line is not a record: ${line.slice(0, 120)}`);
    for (const r of log.records) {
      if (r.kind === "error") recordingProblems.push(`.query-log/${log.label}: ${r.process} (pid ${r.pid}): ${r.error}`);
    }
  }
  const sourceCounts: Report["sourceCounts"] = [];
  for (const need of required) {
    const log = logs.find((l) => l.label === need.label);
    const mine = (log?.records ?? []).filter((r) => r.process === need.process);
    const installs = mine.filter((r) => r.kind === "install");
    const queries = mine.filter((r): r is QueryRecord => r.kind === "query" && issuerOf(r.site) !== "test");
    sourceCounts.push({ label: need.label, process: need.process, shapes: new Set(queries.map(shapeKey)).size, processes: new Set(installs.map((r) => r.pid)).size });
    if (!log) recordingProblems.push(`.query-log/${need.label}/ is missing: ${need.how} did not run with query recording, so ${need.what} went unchecked.`);
    else if (installs.length === 0) recordingProblems.push(`no ${need.process} process installed the recorder in .query-log/${need.label}/: ${need.what} went unchecked (it records through ${need.how}).`);
    else if (queries.length === 0) recordingProblems.push(`${need.what} recorded no query of the product's code in .query-log/${need.label}/: recording broke, or the suites stopped exercising it.`);
  }

  const groups = new Map<string, { shape: QueryShape; records: QueryRecord[] }>();
  for (const log of logs) {
    for (const r of log.records) {
      if (r.kind !== "query") continue;
      const key = shapeKey(r);
      const g = groups.get(key) ?? { shape: r, records: [] };
      g.records.push(r);
      groups.set(key, g);
    }
  }
  let testOnlyShapes = 0;
  const findings: Finding[] = [];
  for (const { shape, records } of groups.values()) {
    const counted = records.filter((r) => issuerOf(r.site) !== "test");
    if (counted.length === 0) {
      testOnlyShapes++;
      continue;
    }
    findings.push({
      shape,
      databases: [...new Set(counted.map((r) => r.database))].sort(),
      sites: [...new Set(counted.map((r) => siteText(r.site)))].sort(),
      processes: [...new Set(counted.map((r) => r.process))].sort(),
      issuers: [...new Set(counted.map((r) => issuerOf(r.site)))].sort(),
      verdict: checkQuery(config, shape),
    });
  }
  findings.sort((a, b) => (describeQuery(a.shape) < describeQuery(b.shape) ? -1 : 1));
  if (findings.length === 0) recordingProblems.push("the log holds no query issued by the product's code: recording broke, and an empty log proves nothing.");
  const failures = findings.filter((f) => f.verdict.status === "missing" || f.verdict.status === "unsupported");
  const used: IndexRef[] = findings.flatMap((f) => (f.verdict.status === "covered" ? f.verdict.by : []));
  return {
    recordingProblems,
    sourceCounts,
    testOnlyShapes,
    findings,
    failures,
    proposals: mergeProposals(failures.flatMap((f) => (f.verdict.status === "missing" ? f.verdict.proposals : []))),
    unused: unusedIndexes(config, used),
  };
}

/** JSON with two-space indentation, but an object or array of plain values kept on one line (as firestore.indexes.json reads best). */
export function compactJson(value: unknown, depth = 0): string {
  const pad = "  ".repeat(depth + 1);
  const end = "  ".repeat(depth);
  const flat = (v: unknown): boolean => v === null || typeof v !== "object";
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]";
    return `[\n${value.map((v) => pad + compactJson(v, depth + 1)).join(",\n")}\n${end}]`;
  }
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value);
    if (entries.every(([, v]) => flat(v))) return `{ ${entries.map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v)}`).join(", ")} }`;
    return `{\n${entries.map(([k, v]) => `${pad}${JSON.stringify(k)}: ${compactJson(v, depth + 1)}`).join(",\n")}\n${end}}`;
  }
  return JSON.stringify(value);
}

const indent = (text: string, by: string): string =>
  text
    .split("\n")
    .map((l) => by + l)
    .join("\n");

function proposalText(p: Proposal): string {
  if (p.kind === "index") return `add to "indexes" in firestore.indexes.json:\n${indent(compactJson(p.entry), "  ")}`;
  const what = p.replacesExisting
    ? `replace the "fieldOverrides" entry for ${p.entry.collectionGroup}.${p.entry.fieldPath} in firestore.indexes.json with (what it lists today, plus the missing index)`
    : `add to "fieldOverrides" in firestore.indexes.json (an override replaces the indexes the field has now, automatic ones included, so those are listed to keep them; drop any no query needs)`;
  return `${what}:\n${indent(compactJson(p.entry), "  ")}`;
}

const modeText = (i: { order?: string; arrayConfig?: string }): string => (i.arrayConfig ? "contains" : (i.order ?? "").toLowerCase());

/** One line per unused composite, and one per unused single-field index across the collection groups that list it. */
function unusedLines(unused: UnusedEntry[]): string[] {
  const lines: string[] = [];
  const overrides = new Map<string, string[]>();
  for (const u of unused) {
    if (u.kind === "index") {
      const e = u.entry as CompositeIndexConfig;
      lines.push(`composite index on ${e.collectionGroup} (${e.queryScope ?? "COLLECTION"}): ${e.fields.map((f) => `${f.fieldPath} ${modeText(f)}`).join(", ")}`);
      continue;
    }
    const e = u.entry as FieldOverrideConfig;
    for (const i of u.unusedIndexes ?? []) {
      const key = `${e.fieldPath} ${modeText(i)} (${i.queryScope ?? "COLLECTION"})`;
      overrides.set(key, [...(overrides.get(key) ?? []), e.collectionGroup]);
    }
  }
  for (const [key, groups] of overrides) lines.push(`field override ${key} on ${groups.join(", ")}`);
  return lines;
}

/** The text the check prints. */
export function formatReport(report: Report, options: { verbose?: boolean; indexFile?: string } = {}): string {
  const file = options.indexFile ?? "firestore.indexes.json";
  const out: string[] = [];
  out.push(`Index coverage check: ${report.findings.length} query shapes issued by the product's code, against ${file}`);
  const sources = report.sourceCounts.map((s) => `${s.label}/${s.process}: ${s.shapes} shapes from ${s.processes} processes`).join("; ");
  out.push(`  recorded: ${sources}; ${report.testOnlyShapes} shapes issued only by test code were left out`);
  out.push(`  (functions/lib/*.js lines are the compiled code the Functions emulator and the CLI ran; the source is functions/src/*.ts)`);
  out.push("");

  for (const f of report.failures) {
    const v = f.verdict;
    const label = v.status === "missing" ? "MISSING INDEX" : "UNSUPPORTED QUERY";
    out.push(`FAIL ${label}  ${describeQuery(f.shape)}   [database ${f.databases.join(", ")}]`);
    for (const s of f.sites.slice(0, 4)) out.push(`    issued by  ${s}`);
    if (f.sites.length > 4) out.push(`    issued by  … and ${f.sites.length - 4} more places`);
    out.push(`    why        ${v.why}`);
    if (v.status === "missing") for (const p of v.proposals) out.push(indent(proposalText(p), "    "));
    out.push("");
  }

  const covered = report.findings.filter((f) => f.verdict.status === "covered" || f.verdict.status === "no-index-needed");
  out.push(`ok   ${covered.length} query shapes have the index they need${options.verbose ? ":" : " (--verbose lists them)"}`);
  if (options.verbose) {
    for (const f of covered) out.push(`       ${describeQuery(f.shape)}  <- ${f.verdict.why}  [${f.sites[0]}]`);
  }
  if (report.unused.length > 0) {
    out.push("");
    const lines = unusedLines(report.unused);
    out.push(`WARN ${lines.length} indexes in ${file} are used by no recorded query. Not a failure: client (web and mobile SDK) queries`);
    out.push(`     and code paths the suites do not reach are not recorded, so remove one only when you know nothing needs it:`);
    for (const l of lines) out.push(`       ${l}`);
  }
  out.push("");

  if (report.recordingProblems.length > 0) {
    out.push("FAIL the query log cannot vouch for the indexes:");
    for (const p of report.recordingProblems) out.push(`  - ${p}`);
    out.push("  Run the whole `npm test` (it records through `scripts/emulators.mjs --record-queries`), then `npm run check:indexes`.");
  }
  if (report.failures.length > 0) {
    out.push(
      `FAIL ${report.failures.length} recorded queries have no index in ${file}. The emulator runs them anyway; production Firestore refuses them with FAILED_PRECONDITION.`,
    );
    if (report.proposals.length > 0) {
      const indexes = report.proposals.flatMap((p) => (p.kind === "index" ? [p.entry] : []));
      const overrides = report.proposals.flatMap((p) => (p.kind === "fieldOverride" ? [p.entry] : []));
      out.push(`     Everything to add, merged (a fieldOverrides entry replaces the one for the same collection group and field):`);
      out.push(indent(compactJson({ ...(indexes.length ? { indexes } : {}), ...(overrides.length ? { fieldOverrides: overrides } : {}) }), "     "));
    }
    out.push("     Or change the query so that an existing index serves it.");
  }
  if (report.recordingProblems.length === 0 && report.failures.length === 0) {
    out.push(`PASS every recorded query of the product's code has its index in ${file}.`);
  }
  return out.join("\n");
}
