import { DomainError } from "./errors";

/** Page sizes of the list callables: a default, and the most one call reads. */
export const DEFAULT_PAGE_SIZE = 25;
export const MAX_PAGE_SIZE = 100;

/**
 * A list's paging cursor: the sort values and document id of the last item returned, opaque to clients
 * (base64url JSON) and tagged with the list it belongs to, so a cursor of one list (or one filter) is
 * refused by another rather than silently skipping items.
 */
export function encodeCursor(list: string, values: readonly (string | number | null)[]): string {
  return Buffer.from(JSON.stringify({ l: list, v: values }), "utf8").toString("base64url");
}

/** The values of a cursor `encodeCursor(list, ...)` made; anything else is INVALID_CURSOR (invalid-argument). */
export function decodeCursor(list: string, cursor: string, arity: number): (string | number | null)[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    parsed = null;
  }
  const p = parsed as { l?: unknown; v?: unknown } | null;
  const ok =
    p !== null &&
    typeof p === "object" &&
    p.l === list &&
    Array.isArray(p.v) &&
    p.v.length === arity &&
    p.v.every((x) => x === null || typeof x === "string" || (typeof x === "number" && Number.isFinite(x)));
  if (!ok) throw new DomainError("invalid-argument", "INVALID_CURSOR", "The cursor is not one this list returned.");
  return p.v as (string | number | null)[];
}
