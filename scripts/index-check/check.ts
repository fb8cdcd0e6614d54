/**
 * The index coverage check: `npm run check:indexes`, the last step of `npm test`.
 *
 * The Firestore emulator runs any query without an index; production refuses one with FAILED_PRECONDITION. The
 * emulator suites record the shape of every query the code sends (recorder.cjs, into .query-log/<label>/), and this
 * checks each one that the product's code issued against firestore.indexes.json with Firestore's index rules
 * (rules.ts); the queries the engine ran on an example app's database (APPS) are checked against that app's own
 * index file instead, and so is everything recorded by a run on an example's own emulator project (APP_RUNS). Exit 0: every query has its index (unused indexes are only a warning). Exit 1: a query has
 * none; the output names the query, where it is issued, why, and the exact JSON to add. Exit 2: the log cannot
 * vouch for anything (missing, empty, a source that never recorded, a recorder error).
 *
 *   tsx scripts/index-check/check.ts [--verbose] [--log <dir>] [--indexes <file>]
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import {
  SOCIAL_ANALYTICS,
  SOCIAL_ANALYTICS_DATABASE,
  SOCIAL_ANALYTICS_INDEXES_FILE,
  SOCIAL_ANALYTICS_RESTORED_DATABASE,
  SOCIAL_DATABASE,
  SOCIAL_INDEXES_FILE,
  SOCIAL_RESTORED_DATABASE,
} from "../../examples/social/registry";
import { WORKSPACES_DATABASE, WORKSPACES_INDEXES_FILE, WORKSPACES_RESTORED_DATABASE } from "../../test/fixtures/workspaces/registry";
import { analyse, appSources, formatReport, splitByDatabase, type AppDatabase, type LabelledLog, type LogRecord } from "./report";
import type { IndexConfig } from "../../functions/src/indexes/rules";

const root = resolve(import.meta.dirname, "..", "..");

/**
 * The example apps' databases: the queries the engine ran there are held to the app's own index file for that
 * database, as the app would deploy it (a database of its own, such as the social example's analytics database, has
 * its own file), and everything else to the product's.
 */
const APPS: readonly AppDatabase[] = [
  ...[SOCIAL_DATABASE, SOCIAL_RESTORED_DATABASE].map((database) => ({ database, indexFile: SOCIAL_INDEXES_FILE, suite: "test/integration/examples/social.test.ts" })),
  ...[SOCIAL_ANALYTICS_DATABASE, SOCIAL_ANALYTICS_RESTORED_DATABASE].map((database) => ({ database, indexFile: SOCIAL_ANALYTICS_INDEXES_FILE, suite: "test/integration/examples/social-databases.test.ts" })),
  // The request-group suites' test app (users in several workspaces): its queries are held to its own index file.
  { database: WORKSPACES_DATABASE, indexFile: WORKSPACES_INDEXES_FILE, suite: "test/integration/requests/group.test.ts" },
  { database: WORKSPACES_RESTORED_DATABASE, indexFile: WORKSPACES_INDEXES_FILE, suite: "test/integration/requests/group-storage.test.ts" },
  ...namedDatabasesIn(join(root, "firebase.json")),
];

/**
 * The named databases a Firebase config deploys indexes to: `firestore` may be one entry (the default database) or a
 * list with a `database` per entry (the governed databases of docs/decisions/0036-several-databases.md). Each named
 * one's recorded queries are held to its own index file; the default database's stay the product's.
 */
function namedDatabasesIn(configFile: string): AppDatabase[] {
  if (!existsSync(configFile)) return [];
  const firestore = (JSON.parse(readFileSync(configFile, "utf8")) as { firestore?: unknown }).firestore;
  const entries = Array.isArray(firestore) ? (firestore as { database?: unknown; indexes?: unknown }[]) : [];
  return entries
    .filter((e) => typeof e.database === "string" && e.database !== "(default)" && typeof e.indexes === "string")
    .map((e) => ({ database: e.database as string, indexFile: join(dirname(configFile), e.indexes as string), suite: "the suites that run the engine on it" }));
}

/**
 * Runs on an example's own emulator project (`npm run test:social`: demo-social, its functions enforcing its
 * registry): every query recorded there, in any of its databases, is the app's, held to the app's index file. The
 * run must have recorded the functions' queries and the suites' own.
 */
const APP_RUNS: readonly { label: string; indexFile: string; databases: Record<string, string>; required: ReturnType<typeof appSources> }[] = [
  {
    label: "social",
    indexFile: SOCIAL_INDEXES_FILE,
    // Its analytics database (registry v4; identity-mapped there: the database is named analytics) has its own file.
    databases: { [SOCIAL_ANALYTICS]: SOCIAL_ANALYTICS_INDEXES_FILE },
    required: [
      { label: "social", process: "functions-worker", what: "the social example's functions (callables, TTL trigger, the console's calls)", how: "npm run test:social (scripts/index-check/preload.cjs through NODE_OPTIONS)" },
      { label: "social", process: "vitest", what: "the social example's suites on its own project", how: "npm run test:social (test/helpers/record-queries.ts, a vitest setup file)" },
    ],
  },
];

function option(name: string, fallback: string): string {
  const i = process.argv.indexOf(name);
  return i >= 0 && process.argv[i + 1] ? resolve(process.argv[i + 1]!) : fallback;
}

function readLogs(dir: string): LabelledLog[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => {
      const records: LogRecord[] = [];
      const badLines: string[] = [];
      for (const file of readdirSync(join(dir, d.name)).filter((f) => f.endsWith(".jsonl")).sort()) {
        for (const line of readFileSync(join(dir, d.name, file), "utf8").split("\n")) {
          if (line.trim() === "") continue;
          try {
            records.push(JSON.parse(line) as LogRecord);
          } catch {
            badLines.push(`${file}: ${line}`);
          }
        }
      }
      return { label: d.name, records, badLines };
    });
}

function readConfig(indexFile: string): IndexConfig | null {
  try {
    return JSON.parse(readFileSync(indexFile, "utf8")) as IndexConfig;
  } catch (err) {
    process.stderr.write(`index coverage check: cannot read ${indexFile}: ${(err as Error).message}\n`);
    return null;
  }
}

function main(): number {
  const logDir = option("--log", join(root, ".query-log"));
  const indexFile = option("--indexes", join(root, "firestore.indexes.json"));
  const logs = readLogs(logDir);
  const runs = new Set(APP_RUNS.map((r) => r.label));
  const { product, apps } = splitByDatabase(
    logs.filter((l) => !runs.has(l.label)),
    APPS.map((a) => a.database),
  );
  const parts = [
    { logs: product, indexFile, required: undefined },
    ...APPS.map((a) => ({ logs: apps.get(a.database) ?? [], indexFile: a.indexFile, required: appSources(a) })),
    ...APP_RUNS.flatMap((r) => {
      const run = splitByDatabase(
        logs.filter((l) => l.label === r.label),
        Object.keys(r.databases),
      );
      return [
        { logs: run.product, indexFile: r.indexFile, required: r.required },
        // A database of the app's own with its own file: its queries, if the run made any, are held to that file.
        ...Object.entries(r.databases).map(([database, file]) => ({ logs: run.apps.get(database) ?? [], indexFile: file, required: [] })),
      ];
    }),
  ];
  let exit = 0;
  for (const part of parts) {
    const config = readConfig(part.indexFile);
    if (!config) return 2;
    const report = analyse(part.logs, config, part.required);
    process.stdout.write(`${formatReport(report, { verbose: process.argv.includes("--verbose"), indexFile: relative(root, part.indexFile) })}\n`);
    if (report.recordingProblems.length > 0) exit = 2;
    else if (report.failures.length > 0 && exit === 0) exit = 1;
  }
  return exit;
}

process.exitCode = main();
