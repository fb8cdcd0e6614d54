/**
 * The index coverage check: `npm run check:indexes`, the last step of `npm test`.
 *
 * The Firestore emulator runs any query without an index; production refuses one with FAILED_PRECONDITION. The
 * emulator suites record the shape of every query the code sends (recorder.cjs, into .query-log/<label>/), and this
 * checks each one that the product's code issued against firestore.indexes.json with Firestore's index rules
 * (rules.ts). Exit 0: every query has its index (unused indexes are only a warning). Exit 1: a query has none;
 * the output names the query, where it is issued, why, and the exact JSON to add. Exit 2: the log cannot vouch for
 * anything (missing, empty, a source that never recorded, a recorder error).
 *
 *   tsx scripts/index-check/check.ts [--verbose] [--log <dir>] [--indexes <file>]
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { analyse, formatReport, type LabelledLog, type LogRecord } from "./report";
import type { IndexConfig } from "./rules";

const root = resolve(import.meta.dirname, "..", "..");

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

function main(): number {
  const logDir = option("--log", join(root, ".query-log"));
  const indexFile = option("--indexes", join(root, "firestore.indexes.json"));
  let config: IndexConfig;
  try {
    config = JSON.parse(readFileSync(indexFile, "utf8")) as IndexConfig;
  } catch (err) {
    process.stderr.write(`index coverage check: cannot read ${indexFile}: ${(err as Error).message}\n`);
    return 2;
  }
  const report = analyse(readLogs(logDir), config);
  process.stdout.write(`${formatReport(report, { verbose: process.argv.includes("--verbose"), indexFile: relative(root, indexFile) })}\n`);
  if (report.recordingProblems.length > 0) return 2;
  return report.failures.length > 0 ? 1 : 0;
}

process.exitCode = main();
