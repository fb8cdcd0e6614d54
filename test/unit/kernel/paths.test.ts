import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compareNames, matchPattern, parentDocumentPath, patternMatchesSegments, segments } from "../../../functions/src/kernel/paths";

/** The helpers' definitions, written the slow and obvious way: the fast paths must agree with them. */
const reference = {
  segments: (p: string) => p.split("/").filter((s) => s.length > 0),
  parent(p: string): string | null {
    const s = reference.segments(p);
    return s.length >= 4 ? s.slice(0, -2).join("/") : null;
  },
  match(pattern: string, path: string): Record<string, string> | null {
    const p = reference.segments(pattern);
    const s = reference.segments(path);
    if (p.length !== s.length) return null;
    const vars: Record<string, string> = {};
    for (let i = 0; i < p.length; i++) {
      const m = /^\{([A-Za-z]+)\}$/.exec(p[i]!);
      if (m) vars[m[1]!] = s[i]!;
      else if (p[i] !== s[i]) return null;
    }
    return vars;
  },
};

const segment = fc.constantFrom("a", "b", "tenants", "t-1", "orders", "o-1", "{x}", "");
const path = fc.array(segment, { maxLength: 8 }).map((s) => s.join("/"));
const pattern = fc.array(fc.constantFrom("a", "b", "tenants", "orders", "{tenantId}", "{orderId}"), { minLength: 1, maxLength: 6 }).map((s) => s.join("/"));

describe("path helpers agree with their definitions", () => {
  it("segments and parentDocumentPath, clean paths and paths with stray slashes alike", () => {
    fc.assert(
      fc.property(path, (p) => {
        expect(segments(p)).toEqual(reference.segments(p));
        expect(parentDocumentPath(p)).toBe(reference.parent(p));
      }),
      { numRuns: 2000 },
    );
  });

  it("matchPattern and patternMatchesSegments (compiled patterns are cached)", () => {
    fc.assert(
      fc.property(pattern, path, (pat, p) => {
        expect(matchPattern(pat, p)).toEqual(reference.match(pat, p));
        expect(patternMatchesSegments(pat, segments(p))).toBe(reference.match(pat, p) !== null);
      }),
      { numRuns: 2000 },
    );
  });
});

describe("compareNames", () => {
  it("orders names as Firestore does: segment by segment, each by its UTF-8 bytes", () => {
    const names = ["a/b", "a/b/c/d", "a/b-x", "a/\u{1F600}", "a/\uFFFD", "a/é", "a/z", "a/B", "a/bb", "a/b/c/\u0000"];
    const bytes = (s: string) => s.split("/").map((x) => Buffer.from(x, "utf8"));
    const byBytes = (p: string, q: string) => {
      const x = bytes(p);
      const y = bytes(q);
      for (let i = 0; i < Math.min(x.length, y.length); i++) {
        const c = Buffer.compare(x[i]!, y[i]!);
        if (c !== 0) return c;
      }
      return x.length - y.length;
    };
    const sign = (n: number) => Math.sign(n);
    for (const p of names) for (const q of names) expect(sign(compareNames(p, q)), `${p} vs ${q}`).toBe(sign(byBytes(p, q)));
    // A subtree stays contiguous.
    expect(["a/b-x", "a/b/c/d", "a/b"].sort(compareNames)).toEqual(["a/b", "a/b/c/d", "a/b-x"]);
    // The in-place comparison of clean names agrees with the byte order on generated names: segments from a few
    // characters around the places where orders differ ("/" against "-" and ".", BMP past the surrogates against
    // astral, prefixes), and unclean names (doubled, leading, trailing slashes), which take the segment path.
    const unit = fc.constantFrom("a", "b", "-", ".", "\u0000", "é", "\uE000", "\uFFFD", "\u{1F600}", "\u{10FFFF}");
    const segment = fc.array(unit, { minLength: 1, maxLength: 4 }).map((u) => u.join(""));
    const name = fc.oneof(
      { weight: 4, arbitrary: fc.array(segment, { minLength: 1, maxLength: 6 }).map((s) => s.join("/")) },
      { weight: 1, arbitrary: fc.array(fc.oneof(segment, fc.constant("")), { minLength: 1, maxLength: 6 }).map((s) => s.join("/")) },
    );
    const bytesClean = (p: string) => p.split("/").filter((x) => x.length > 0).join("/");
    fc.assert(
      fc.property(name, name, (p, q) => {
        expect(sign(compareNames(p, q)), `${JSON.stringify(p)} vs ${JSON.stringify(q)}`).toBe(sign(byBytes(bytesClean(p), bytesClean(q))));
        expect(sign(compareNames(p, q)) + sign(compareNames(q, p)), "antisymmetric").toBe(0);
      }),
      { numRuns: 5000, seed: 20261203 },
    );
  });
});
