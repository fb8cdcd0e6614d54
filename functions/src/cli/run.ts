import { parseArgs } from "node:util";
import { DomainError } from "../kernel/errors";
import { setMetricsTransport } from "../platform/metrics";
import { EXIT, stringOpt, type Command, type OptionSpec } from "./command";
import { COMMANDS } from "./commands";
import { writeErr, writeJson, writeOut } from "./output";
import { closeConnections, ConnectionError, connectTimeoutMs, offlineTarget, probeFirestore, resolveTarget, UsageError } from "./target";

const GLOBAL_OPTIONS: OptionSpec = {
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  project: { type: "string" },
  database: { type: "string" },
};

const GLOBAL_HELP = `Global options:
  --json             machine-readable output on stdout (errors too: {"ok":false,"error":{...}})
  --project <id>     the Google Cloud project (else GOOGLE_CLOUD_PROJECT / GCLOUD_PROJECT)
  --database <id>    a governed database of the registry, by its logical name (primary, or one of its
                     databases) or its id: the command narrows to it; any other id replaces the primary's
                     (default "(default)", or RETENTION_DATABASE_ID), e.g. a restored copy
  -h, --help         this help

Target: the emulators when FIRESTORE_EMULATOR_HOST is set (and FIREBASE_AUTH_EMULATOR_HOST for Auth),
otherwise the named project through Application Default Credentials. The first read must answer within
RETENTION_CONNECT_TIMEOUT_MS (default 8000) or the command exits 2.
Progress is shown on stderr when stderr is a terminal.`;

export function mainHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    "retention: the operator CLI of the retention and deletion control plane",
    "",
    "Usage: retention <command> [options]",
    "",
    "Commands:",
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    "",
    GLOBAL_HELP,
    "",
    "Exit codes: 0 all good, 1 findings or a failed verification, 2 usage or connection error.",
    "Run `retention <command> --help` for a command's options.",
  ].join("\n");
}

export function commandHelp(c: Command): string {
  return [`Usage: ${c.usage}`, "", c.summary, "", c.details, "", GLOBAL_HELP].join("\n");
}

/** Parses argv, runs one command, and returns its exit code. Never throws: every failure is an exit code. */
export async function runCli(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined) {
    writeErr(mainHelp());
    return EXIT.usage;
  }
  if (name === "--help" || name === "-h" || name === "help") {
    const about = rest[0] === undefined ? undefined : COMMANDS.find((c) => c.name === rest[0]);
    writeOut(about ? commandHelp(about) : mainHelp());
    return EXIT.ok;
  }
  const cmd = COMMANDS.find((c) => c.name === name);
  if (!cmd) {
    writeErr(`retention: unknown command ${JSON.stringify(name)}. Commands: ${COMMANDS.map((c) => c.name).join(", ")}.`);
    writeErr("Run `retention --help` for usage.");
    return EXIT.usage;
  }

  let parsed: { values: Record<string, string | boolean | undefined>; positionals: string[] };
  try {
    parsed = parseArgs({ args: [...rest], options: { ...GLOBAL_OPTIONS, ...cmd.options }, allowPositionals: true, strict: true }) as typeof parsed;
  } catch (err) {
    return fail(cmd, rest.includes("--json"), new UsageError(err instanceof Error ? err.message : String(err)));
  }
  const { values, positionals } = parsed;
  const json = values.json === true;
  if (values.help === true) {
    writeOut(commandHelp(cmd));
    return EXIT.ok;
  }
  if (positionals.length > cmd.positionals.length) {
    return fail(cmd, json, new UsageError(`unexpected argument ${JSON.stringify(positionals[cmd.positionals.length])}.`));
  }

  // Metric points are for the deployed jobs; an operator's ad-hoc run must not feed the alerting series.
  setMetricsTransport(null);
  try {
    const needsFirestore = typeof cmd.needsFirestore === "function" ? cmd.needsFirestore(values) : cmd.needsFirestore;
    const target = needsFirestore ? resolveTarget({ project: stringOpt(values, "project"), database: stringOpt(values, "database") }) : offlineTarget();
    const ctx = { values, positionals, json, target };
    cmd.validate?.(ctx);
    if (needsFirestore) await probeFirestore(target, connectTimeoutMs());
    return await cmd.run(ctx);
  } catch (err) {
    return fail(cmd, json, err);
  } finally {
    await Promise.race([closeConnections(), new Promise((r) => setTimeout(r, 1_000).unref())]);
  }
}

/** gRPC codes and Auth/network errors that mean "could not reach or authenticate to the target". */
function isConnectionProblem(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown };
  if (typeof e.code === "number") return [4, 7, 14, 16].includes(e.code);
  if (typeof e.code === "string") return /^(ECONNREFUSED|ENOTFOUND|ETIMEDOUT|ECONNRESET|app\/invalid-credential|auth\/internal-error)$/.test(e.code);
  return typeof e.message === "string" && /Could not load the default credentials|ECONNREFUSED/.test(e.message);
}

function fail(cmd: Command, json: boolean, err: unknown): number {
  let kind: string;
  let message: string;
  if (err instanceof UsageError) {
    kind = "USAGE";
    message = err.message;
  } else if (err instanceof ConnectionError || isConnectionProblem(err)) {
    kind = "CONNECTION";
    message = err instanceof Error ? err.message.split("\n")[0]! : String(err);
  } else if (err instanceof DomainError) {
    kind = err.reason;
    message = err.message;
  } else {
    kind = "ERROR";
    message = err instanceof Error ? (err.stack ?? err.message) : String(err);
  }
  if (json) writeJson({ ok: false, error: { kind, message } });
  writeErr(`retention ${cmd.name}: ${message}`);
  if (kind === "USAGE") writeErr(`Run \`retention ${cmd.name} --help\` for usage.`);
  return EXIT.usage;
}
