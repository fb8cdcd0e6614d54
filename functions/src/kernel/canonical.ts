import { createHash } from "node:crypto";

/**
 * Canonical JSON: object keys sorted, no whitespace, `undefined` members dropped. Two equal values always
 * give the same bytes, which is what makes manifest and evidence hashes reproducible.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") {
    if (typeof value === "number" && !Number.isFinite(value)) throw new Error("canonicalJson: non-finite number");
    return JSON.stringify(value) ?? "null";
  }
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v === undefined ? null : v)).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
}

export function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

export const hashCanonical = (value: unknown): string => sha256Hex(canonicalJson(value));

/**
 * A SHA-256 over a sequence of canonical JSON values, fed one at a time: the hash of a manifest that is
 * streamed and never held whole. Equal sequences give equal digests; order matters.
 */
export function canonicalDigest(): { add: (value: unknown) => void; hex: () => string } {
  const h = createHash("sha256");
  return {
    add: (value) => {
      h.update(canonicalJson(value), "utf8");
      h.update("\n", "utf8");
    },
    hex: () => h.copy().digest("hex"),
  };
}
