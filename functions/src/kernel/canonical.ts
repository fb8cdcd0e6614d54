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
  // Built in one string, without intermediate arrays: manifests and evidence hash one of these per document.
  if (Array.isArray(value)) {
    let out = "[";
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ",";
      // A hole stays empty, as it always has (hashes were made that way); an undefined slot is null.
      if (!(i in value)) continue;
      const v: unknown = value[i];
      out += canonicalJson(v === undefined ? null : v);
    }
    return `${out}]`;
  }
  const record = value as Record<string, unknown>;
  // Default sort: UTF-16 code unit order, as `<` compares.
  const keys = Object.keys(record).sort();
  let out = "{";
  let first = true;
  for (const k of keys) {
    const v = record[k];
    if (v === undefined) continue;
    out += `${first ? "" : ","}${JSON.stringify(k)}:${canonicalJson(v)}`;
    first = false;
  }
  return `${out}}`;
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
