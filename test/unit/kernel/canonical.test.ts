import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalDigest, canonicalJson } from "../../../functions/src/kernel/canonical";

/** The definition, written the slow and obvious way: the fast version must give the same bytes (hashes depend on them). */
function reference(value: unknown): string {
  if (value === null || typeof value !== "object") {
    if (typeof value === "number" && !Number.isFinite(value)) throw new Error("non-finite");
    return JSON.stringify(value) ?? "null";
  }
  if (Array.isArray(value)) return `[${value.map((v: unknown) => reference(v === undefined ? null : v)).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${reference(v)}`).join(",")}}`;
}

describe("canonicalJson", () => {
  it("sorts keys, drops undefined members, writes undefined array slots as null, and has no whitespace", () => {
    expect(canonicalJson({ b: 1, a: [undefined, "x", { d: undefined, c: true }], é: null, B: 2 })).toBe('{"B":2,"a":[null,"x",{"c":true}],"b":1,"é":null}');
    expect(canonicalJson([])).toBe("[]");
    // eslint-disable-next-line no-sparse-arrays
    expect(canonicalJson([, 1])).toBe("[,1]");
    expect(canonicalJson(new Array(2))).toBe("[,]");
    expect(canonicalJson({})).toBe("{}");
    expect(canonicalJson({ only: undefined })).toBe("{}");
    expect(() => canonicalJson({ n: Number.NaN })).toThrow(/non-finite/);
  });

  it("gives the reference's bytes for any JSON-like value (keys in any order and script, nested, with undefined)", () => {
    const key = fc.string({ unit: fc.constantFrom("a", "b", "A", "_", "é", "\u{1F600}", "\uE000", "1", "10", " "), maxLength: 4 });
    const { value } = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: "small" },
        fc.constant(null),
        fc.constant(undefined),
        fc.boolean(),
        fc.integer(),
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        fc.string(),
        fc.array(tie("value"), { maxLength: 5 }),
        fc.sparseArray(tie("value"), { maxLength: 5 }),
        fc.dictionary(key, tie("value"), { maxKeys: 6 }),
      ),
    }));
    fc.assert(
      fc.property(value, (v) => {
        expect(canonicalJson(v)).toBe(reference(v));
      }),
      { numRuns: 3000, seed: 20261203 },
    );
  });

  it("a digest over a sequence depends on every value and on their order", () => {
    const digest = (xs: unknown[]) => {
      const d = canonicalDigest();
      for (const x of xs) d.add(x);
      return d.hex();
    };
    expect(digest([{ a: 1 }, { b: 2 }])).toBe(digest([{ a: 1 }, { b: 2 }]));
    expect(digest([{ a: 1 }, { b: 2 }])).not.toBe(digest([{ b: 2 }, { a: 1 }]));
    expect(digest([{ a: 1 }])).not.toBe(digest([{ a: 2 }]));
  });
});
