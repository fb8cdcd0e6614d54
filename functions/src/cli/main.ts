/**
 * The `retention` operator CLI (bin/retention.js requires this file, which runs at once). Commands live in
 * `commands/`; every one prints a table by default and JSON with --json, and ends with the exit codes
 * 0 all good, 1 findings or a failed verification, 2 usage or connection error.
 *
 * Command output is the only thing on stdout. Library and job logs (firebase-functions' logger writes
 * through console.info/log) go to stderr: the console is redirected before any of those modules load,
 * because the logger keeps the console functions it found at load time.
 */
import { format } from "node:util";

for (const level of ["log", "info", "debug"] as const) {
  console[level] = (...args: unknown[]) => {
    process.stderr.write(`${format(...args)}\n`);
  };
}

/** If something still holds the event loop after the command (a stuck channel), end anyway, shortly. */
function finish(code: number): void {
  process.exitCode = code;
  setTimeout(() => process.exit(code), 1_000).unref();
}

void import("./run")
  .then(({ runCli }) => runCli(process.argv.slice(2)))
  .then(finish, (err: unknown) => {
    process.stderr.write(`retention: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    finish(2);
  });
