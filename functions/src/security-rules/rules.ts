import { PROTECTED_FIELDS } from "../kernel/governed";
import type { Registry } from "../kernel/policy-schema";
import { TENANT_CLOSURE_FIELD } from "../kernel/visibility";

/**
 * The retention part of an app's `firestore.rules`, written from the policy registry (`npx retention rules`,
 * docs/SECURITY-RULES.md). Pure: text in, text out.
 *
 * The part is the product's: the functions an app's own match blocks call (who is calling, what a client may see,
 * what a client may never write, and, when the registry declares a scope kind, a closed scope hidden and frozen)
 * and the control-plane collections no client reaches. The app's match blocks stay the app's, outside the markers.
 */

/** The line that opens the generated part. The rest of that line (the registry version) is rewritten too. */
export const RULES_BEGIN = "// <retention:begin>";
/** The line that closes it. */
export const RULES_END = "// <retention:end>";

/** A rules file whose markers are missing, doubled or out of order: nothing is written, and nothing guessed. */
export class RulesMarkerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RulesMarkerError";
  }
}

/** A registry the rules cannot be written from (a scope whose record the rules cannot find from a claim). */
export class RulesGenerationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RulesGenerationError";
  }
}

/** `business-unit` -> `businessUnit`; `tenant` -> `tenant`. */
function camel(kebab: string): string {
  return kebab.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

const pascal = (kebab: string): string => {
  const c = camel(kebab);
  return c.charAt(0).toUpperCase() + c.slice(1);
};

/** The names the generated functions get for a scope kind: `tenant` -> tenantClaim(), tenantOpen(id), inTenant(id). */
export function scopeFunctionNames(scopeName: string): { claim: string; open: string; inScope: string } {
  return { claim: `${camel(scopeName)}Claim`, open: `${camel(scopeName)}Open`, inScope: `in${pascal(scopeName)}` };
}

/**
 * The fields no client may write: PROTECTED_FIELDS (kernel/governed.ts), and the scope's key, the field that
 * carries a document's scope, when the registry names one that list does not have.
 */
export function clientProtectedFields(registry: Registry): string[] {
  const key = registry.subjects?.scope?.key;
  const fields: string[] = [...PROTECTED_FIELDS];
  if (key && !fields.includes(key)) fields.push(key);
  return fields;
}

/** `<head>['a', 'b', ...]<tail>` as lines of at most `width` characters, continuation lines aligned after the `[`. */
function wrappedList(head: string, items: readonly string[], tail: string, width = 112): string[] {
  const indent = " ".repeat(head.length + 1);
  const lines: string[] = [];
  let line = `${head}[`;
  items.forEach((item, i) => {
    const piece = `'${item}'${i === items.length - 1 ? `]${tail}` : ","}`;
    const fresh = line.endsWith("[") || line === indent;
    if (!fresh && line.length + 1 + piece.length > width) {
      lines.push(line);
      line = `${indent}${piece}`;
    } else line = fresh ? `${line}${piece}` : `${line} ${piece}`;
  });
  lines.push(line);
  return lines;
}

function callerSection(registry: Registry): string[] {
  const scope = registry.subjects?.scope;
  const common = [
    "// ---- Who is calling (custom claims) ----",
    "",
    "function signedIn() {",
    "  return request.auth != null;",
    "}",
    "",
    "// Staff carry `roles` (compliance, retention-admin). They act through the callables; the app's rules give them",
    "// direct reads only where it says so.",
    "function hasRole(role) {",
    "  return signedIn()",
    "    && request.auth.token.get('roles', null) is list",
    "    && role in request.auth.token.roles;",
    "}",
    "",
  ];
  if (!scope) {
    return [
      ...common,
      "// The registry declares no scope kind: an app user is any signed-in caller, and the app's rules decide what",
      "// is theirs (their uid on the document or in its path).",
      "function isAppUser() {",
      "  return signedIn();",
      "}",
    ];
  }
  const m = /^([A-Za-z][A-Za-z0-9_-]*)\/\{([A-Za-z]+)\}$/.exec(scope.record);
  if (!m || m[2] !== scope.key) {
    throw new RulesGenerationError(
      `subjects.scope.record ${scope.record}: the rules find a ${scope.name}'s record from the caller's ${scope.key} claim alone, so it must be a top-level <collection>/{${scope.key}}.`,
    );
  }
  const collection = m[1]!;
  const { claim, open, inScope } = scopeFunctionNames(scope.name);
  const key = scope.key;
  const path = `${camel(scope.name)}Path`;
  return [
    ...common,
    `// App users carry their ${scope.name} as a \`${key}\` claim (a string); staff carry none.`,
    `function ${claim}() {`,
    `  return request.auth.token.get('${key}', null);`,
    "}",
    "",
    `// An app user reaches nothing of a ${scope.name} that is closed: every read and write of the app's rules goes`,
    "// through here (directly, or through the function below).",
    "function isAppUser() {",
    `  return signedIn() && ${claim}() is string && ${open}(${claim}());`,
    "}",
    "",
    `// Mirrors kernel/visibility.ts (isTenantOpen): a ${scope.name}'s data is visible only while its record`,
    `// (${scope.record}) exists and carries no \`${TENANT_CLOSURE_FIELD}\`. A closure is recorded when a second staff member`,
    `// approves it, so from that commit the whole ${scope.name} is hidden and frozen, whatever each document's own state`,
    "// (a document a hold keeps ACTIVE, or one a hold's release brings back). One document read per request.",
    `function ${open}(${key}) {`,
    `  let ${path} = /databases/$(database)/documents/${collection}/$(${key});`,
    `  return exists(${path}) && get(${path}).data.get('${TENANT_CLOSURE_FIELD}', null) == null;`,
    "}",
    "",
    `// The caller is an app user of this (open) ${scope.name}.`,
    `function ${inScope}(${key}) {`,
    `  return isAppUser() && ${claim}() == ${key};`,
    "}",
  ];
}

const VISIBILITY_SECTION = [
  "// ---- What a client may see ----",
  "",
  "// Mirrors kernel/visibility.ts (isBusinessVisible): only ACTIVE data whose expireAt has not passed is visible.",
  "// Expiry is a business fact, so an expired document is unreadable while it still waits for the TTL sweeper, and",
  "// a soft-deleted, held or purge-eligible one is unreadable at once. A list query passes only when its filters",
  "// prove this for every result, so client queries must filter on `lifecycleState == 'ACTIVE'`.",
  "function isVisible(data) {",
  "  return data.lifecycleState == 'ACTIVE'",
  "    && (data.get('expireAt', null) == null || data.expireAt > request.time);",
  "}",
  "",
  "// For TTL collections a client reads. When judging a list query the rules engine takes a field the query does",
  "// not filter on as absent, so isVisible alone would let a query without `expireAt > now` return expired",
  "// documents. Requiring the field makes such a query fail instead.",
  "function hasLiveExpiry(data) {",
  "  return data.expireAt > request.time;",
  "}",
];

function writeSection(registry: Registry): string[] {
  return [
    "// ---- What a client may never write ----",
    "",
    "// PROTECTED_FIELDS of kernel/governed.ts: only trusted server code sets or changes them.",
    "function protectedFields() {",
    ...wrappedList("  return ", clientProtectedFields(registry), ";"),
    "}",
    "",
    "// A client create or update sets, changes or removes no retention field. Every create and update the app's",
    "// rules allow must require it (a delete has no fields to check).",
    "function writesNoRetentionField() {",
    "  return (resource == null && !request.resource.data.keys().hasAny(protectedFields()))",
    "    || (resource != null && !request.resource.data.diff(resource.data).affectedKeys().hasAny(protectedFields()));",
    "}",
  ];
}

function controlPlaneSection(registry: Registry): string[] {
  const lines = ["// ---- Control plane: no client access, whatever the role ----"];
  for (const c of registry.controlPlane) {
    lines.push("", `// ${c.description}`, `match /${c.collection}/{document=**} {`, "  allow read, write: if false;", "}");
  }
  return lines;
}

/**
 * The retention part of a rules file for `registry`, from its begin marker to its end marker, indented as if
 * the markers stood at column 0 (spliceRetentionRules indents it to where the markers are). It belongs inside
 * `match /databases/{database}/documents { ... }`, which the scope's record path and the app's rules rely on.
 */
export function generateRetentionRules(registry: Registry): string {
  const lines = [
    `${RULES_BEGIN} generated by \`npx retention rules\` from registry ${registry.version}; do not edit`,
    "// The product's part of these rules: the functions the app's match blocks call, and the control-plane",
    "// collections. `npx retention rules --check` fails when it is not what the registry says (docs/SECURITY-RULES.md).",
    "",
    ...callerSection(registry),
    "",
    ...VISIBILITY_SECTION,
    "",
    ...writeSection(registry),
    "",
    ...controlPlaneSection(registry),
    RULES_END,
  ];
  return `${lines.join("\n")}\n`;
}

interface MarkerSpan {
  begin: number;
  end: number;
  indent: string;
}

function findMarkers(lines: readonly string[], fileName: string): MarkerSpan {
  const where = (prefix: string) => lines.flatMap((l, i) => (l.trimStart().startsWith(prefix) ? [i] : []));
  const begins = where(RULES_BEGIN);
  const ends = where(RULES_END);
  const howTo =
    `Put a line \`${RULES_BEGIN}\` and, below it, a line \`${RULES_END}\` inside \`match /databases/{database}/documents { ... }\` ` +
    "of the rules file, before the app's own match blocks, then run `npx retention rules` to write the retention part between them " +
    "(anything between them is replaced).";
  if (begins.length === 0 && ends.length === 0) throw new RulesMarkerError(`${fileName} has no retention markers. ${howTo}`);
  if (begins.length !== 1) throw new RulesMarkerError(`${fileName} has ${begins.length} \`${RULES_BEGIN}\` lines, not one. ${howTo}`);
  if (ends.length !== 1) throw new RulesMarkerError(`${fileName} has ${ends.length} \`${RULES_END}\` lines, not one. ${howTo}`);
  const begin = begins[0]!;
  const end = ends[0]!;
  if (end < begin) throw new RulesMarkerError(`${fileName}: \`${RULES_END}\` (line ${end + 1}) comes before \`${RULES_BEGIN}\` (line ${begin + 1}). ${howTo}`);
  if (!/match\s+\/databases\/\{database\}\/documents\s*\{/.test(lines.slice(0, begin).join("\n"))) {
    throw new RulesMarkerError(`${fileName}: \`${RULES_BEGIN}\` (line ${begin + 1}) is not inside \`match /databases/{database}/documents\`. ${howTo}`);
  }
  return { begin, end, indent: /^\s*/.exec(lines[begin]!)![0] };
}

/**
 * `rulesText` with everything from its begin marker to its end marker (both lines included) replaced by
 * `block` (generateRetentionRules), indented to the begin marker. Idempotent: splicing the same block into
 * the result changes nothing. Throws RulesMarkerError when the markers are missing, doubled or out of order.
 */
export function spliceRetentionRules(rulesText: string, block: string, fileName = "the rules file"): string {
  const eol = rulesText.includes("\r\n") ? "\r\n" : "\n";
  const lines = rulesText.split(/\r?\n/);
  const { begin, end, indent } = findMarkers(lines, fileName);
  const generated = block
    .replace(/\n$/, "")
    .split("\n")
    .map((l) => (l.length === 0 ? "" : `${indent}${l}`));
  return [...lines.slice(0, begin), ...generated, ...lines.slice(end + 1)].join(eol);
}
