/**
 * Writes docs/CALLABLES.md from the callable contract (functions/src/contract): each callable's caller, App
 * Check, refusals, and its input and output as JSON Schema (zod's toJSONSchema). `--check` fails (exit 1)
 * when the file is not what the schemas say, so the document can never drift from the code; npm test runs it.
 *
 *   npx tsx scripts/contract-docs.ts          # write
 *   npx tsx scripts/contract-docs.ts --check  # verify
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { CALLABLE_NAMES, CALLABLES } from "../functions/src/contract";

const root = join(import.meta.dirname, "..");
const target = join(root, "docs", "CALLABLES.md");

function schemaJson(schema: z.ZodType, io: "input" | "output"): string {
  const json = z.toJSONSchema(schema, { io, unrepresentable: "any", target: "draft-2020-12" }) as Record<string, unknown>;
  delete json.$schema;
  return JSON.stringify(json, null, 2);
}

export function renderContract(): string {
  const lines = [
    "# Callables: the generated contract",
    "",
    "Generated from the zod schemas in `functions/src/contract/` by `npx tsx scripts/contract-docs.ts`; `npm test` fails",
    "when this file and the schemas disagree. The schemas are the ones the functions validate with and the typed client",
    "(`packages/client`) calls through. Inputs are strict: an unknown key is refused (`invalid-argument`,",
    "`INVALID_ARGUMENT`, with `details.issues`). Every callable also refuses a caller without an ID token",
    "(`unauthenticated`, `UNAUTHENTICATED`), and one whose function has no evidence key refuses with `failed-precondition`,",
    "`EVIDENCE_KEY_MISSING`. Refusals are `HttpsError`s with the machine code in `details.reason`; the",
    "states, the meaning of each code and the rules behind them are in [CONTRACT.md](CONTRACT.md).",
    "",
    "Lists page: pass the `nextCursor` of one page as `cursor` for the next (at most 100 items a page); a cursor belongs",
    "to one list and one set of filters (`INVALID_CURSOR` otherwise).",
    "",
    "| callable | caller | App Check | refusals |",
    "| --- | --- | --- | --- |",
    ...CALLABLE_NAMES.map((n) => {
      const s = CALLABLES[n];
      return `| [\`${n}\`](#${n.toLowerCase()}) | ${s.caller} | ${s.appCheck ? "required" : "-"} | ${s.refusals.map((r) => `\`${r}\``).join(", ")} |`;
    }),
    "",
  ];
  for (const name of CALLABLE_NAMES) {
    const s = CALLABLES[name];
    lines.push(
      `## ${name}`,
      "",
      s.summary,
      "",
      `Caller: ${s.caller}.${s.appCheck ? " Requires App Check while `RETENTION_ENFORCE_APP_CHECK` is on." : ""}`,
      "",
      "Input:",
      "",
      "```json",
      schemaJson(s.input, "input"),
      "```",
      "",
      "Output:",
      "",
      "```json",
      schemaJson(s.output, "output"),
      "```",
      "",
    );
  }
  return lines.join("\n");
}

const text = renderContract();
if (process.argv.includes("--check")) {
  let current = "";
  try {
    current = readFileSync(target, "utf8");
  } catch {
    current = "";
  }
  if (current !== text) {
    process.stderr.write("docs/CALLABLES.md is not what the contract's schemas say: run `npx tsx scripts/contract-docs.ts` and commit it.\n");
    process.exit(1);
  }
  process.stdout.write(`docs/CALLABLES.md matches the contract (${CALLABLE_NAMES.length} callables)\n`);
} else {
  writeFileSync(target, text);
  process.stdout.write(`wrote docs/CALLABLES.md (${CALLABLE_NAMES.length} callables)\n`);
}
