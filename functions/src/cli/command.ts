import type { ParseArgsConfig } from "node:util";
import { emulatorGate } from "../platform/settings";
import { UsageError, type Target } from "./target";

export type OptionSpec = NonNullable<ParseArgsConfig["options"]>;
export type OptionValues = Record<string, string | boolean | undefined>;

export interface CommandContext {
  values: OptionValues;
  positionals: string[];
  json: boolean;
  target: Target;
}

/** Exit codes: 0 all good, 1 findings or a failed verification, 2 usage or connection error. */
export const EXIT = { ok: 0, findings: 1, usage: 2 } as const;

export interface Command {
  name: string;
  summary: string;
  usage: string;
  /** The rest of `--help`: what it does, its options, and what its exit codes mean. */
  details: string;
  options: OptionSpec;
  /** Names of positional arguments, in order; more are refused. */
  positionals: readonly string[];
  /**
   * Whether the command reads or writes Firestore (the CLI probes the connection first). A command that can
   * also work on files alone says so per call: then no target is needed and none is probed.
   */
  needsFirestore: boolean | ((values: OptionValues) => boolean);
  /** Checks the arguments before any connection is made, so a usage error never waits on the network. */
  validate?(ctx: CommandContext): void;
  run(ctx: CommandContext): Promise<number>;
}

export function stringOpt(values: OptionValues, name: string): string | undefined {
  const v = values[name];
  return typeof v === "string" ? v : undefined;
}

/**
 * `--as-of` is time travel: the emulators only, so a real project can never be told it is later than it is.
 * The CLI applies the same gate as the jobs (`emulatorGate`): a demo- project and the Firestore and Auth
 * emulators, never one variable alone.
 */
export function asOfOption(values: OptionValues, target: Target): number | null {
  const raw = stringOpt(values, "as-of");
  if (raw === undefined) return null;
  const gate = emulatorGate(process.env);
  if (!target.emulator || !gate.open) {
    throw new UsageError(`--as-of is accepted only on the emulators (not emulated here: ${gate.missing.join(", ") || "FIRESTORE_EMULATOR_HOST"}).`);
  }
  const ms = Date.parse(raw);
  if (!/^\d{4}-\d{2}-\d{2}/.test(raw) || !Number.isFinite(ms)) throw new UsageError(`--as-of ${JSON.stringify(raw)} is not an ISO date-time (e.g. 2027-01-31T00:00:00Z).`);
  return ms;
}

export function positiveIntOpt(values: OptionValues, name: string, fallback: number): number {
  const raw = stringOpt(values, name);
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new UsageError(`--${name} must be a positive integer, got ${JSON.stringify(raw)}.`);
  return n;
}
