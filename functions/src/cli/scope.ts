import { policy } from "../platform/registry";
import { stringOpt, type OptionValues } from "./command";
import { UsageError } from "./target";

const ID = /^[A-Za-z0-9_.-]{1,128}$/;

/**
 * What the registry calls a scope ("tenant", "workspace"), for the CLI's words; "scope" in an app without a scope
 * kind.
 */
export const scopeWord = (): string => policy().scope?.name ?? "scope";

/**
 * A scope named on the command line: `--scope <id>`, or `--tenant <id>`, its alias (the name the CLI had first).
 * Both at once must agree. Checked as an id.
 */
export function scopeOpt(values: OptionValues): string | undefined {
  const scope = stringOpt(values, "scope");
  const tenant = stringOpt(values, "tenant");
  if (scope !== undefined && tenant !== undefined && scope !== tenant) throw new UsageError("--scope and --tenant name the same thing (--tenant is the alias of --scope): give one.");
  const id = scope ?? tenant;
  if (id !== undefined && !ID.test(id)) throw new UsageError(`--${scope !== undefined ? "scope" : "tenant"} ${JSON.stringify(id)} is not a valid id.`);
  return id;
}

/** The `--scope`/`--tenant` option pair, for a command's option table. */
export const SCOPE_OPTIONS = { scope: { type: "string" }, tenant: { type: "string" } } as const;
