import { holdTargetVerdict } from "../../functions/src/contract/hold-target";
import { when } from "./format";
import type { PolicyIndex } from "../../functions/src/kernel/policy";

/**
 * What the path check says, in words, with the server's code for the refusal it foresees, by the registry the functions
 * enforce: the part of it of the governed database the hold goes to (the primary's by default).
 */
export function pathCheck(whole: PolicyIndex, path: string, database?: string): { ok: boolean; text: string; code: string | null } {
  const policy = whole.forCell(database && whole.hasCell(database) ? database : "primary");
  const verdict = holdTargetVerdict(policy, path);
  if (verdict.ok) {
    if (verdict.targetType === "document") return { ok: true, code: null, text: `A document of class ${verdict.retentionClass ?? "?"}: it may be held.` };
    const scope = policy.scopeOfRecord(path) !== null ? policy.registry.subjects?.scope?.name : undefined;
    return { ok: true, code: null, text: `${scope ? `A ${scope}` : "A subtree root"}: the hold covers it and everything under it.` };
  }
  const segments = path.split("/");
  if (verdict.reason === "INVALID_TARGET_PATH" && path.startsWith("gs://")) {
    return { ok: false, code: null, text: "An object in Cloud Storage is held through the document it is held with (a user's profile holds their uploads): enter that document's path." };
  }
  if (verdict.reason === "INVALID_TARGET_PATH") {
    if (segments.some((s) => s === "")) return { ok: false, code: null, text: "The path has an empty part: remove the slash at its start or end, or the doubled slash." };
    if (segments.some((s) => s === "." || s === ".." || /^__.*__$/.test(s))) return { ok: false, code: null, text: "A part of the path is not a name a document can have (., .. or __name__)." };
    if (segments.length % 2 === 1)
      return { ok: false, code: null, text: `“${segments[segments.length - 1]}” is a collection, not a document: add the document's id after it (${path}/…).` };
    return { ok: false, code: null, text: "This is not the path of a document." };
  }
  if (verdict.reason === "NOT_GOVERNED_PATH") {
    const collection = segments[segments.length - 2] ?? path;
    return { ok: false, code: verdict.reason, text: `No retention policy covers “${collection}”, so there is nothing a hold could protect here.` };
  }
  return { ok: false, code: verdict.reason, text: `${verdict.message.replace(/\.$/, "")}: documents of this kind are never held.` };
}

/** "2026-12-01 14:00" (or with a T) read as UTC; null when it is not in that form. */
export function parseUtc(value: string): number | null {
  const m = value.trim().match(/^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2})$/);
  if (!m) return null;
  const ms = Date.parse(`${m[1]}T${m[2]}:00Z`);
  // A day or an hour that does not exist (31 February, 25:00) is refused, not rolled over into the next.
  return Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 16) !== `${m[1]}T${m[2]}` ? null : ms;
}

export const RELEASE_AFTER_FORMAT = "Write the date and time in UTC as YYYY-MM-DD HH:MM, e.g. 2027-03-31 17:00.";

/** A UTC time as the form echoes it: in UTC, then in the officer's own zone. */
export function localEcho(ms: number): string {
  // dateStyle/timeStyle cannot be combined with timeZoneName: the fields are named one by one.
  const local = new Date(ms).toLocaleString(undefined, { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", timeZoneName: "short" });
  return `${when(new Date(ms).toISOString())}, which is ${local} where you are.`;
}
