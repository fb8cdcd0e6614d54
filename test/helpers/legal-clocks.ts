import { LegalClocksSchema, type LegalClocks, type Registry } from "../../functions/src/kernel/policy-schema";

/**
 * The legal clocks the suites run with: GDPR (one month, extendable by two) by default, CCPA (45 days, extendable by
 * 45) for a scope the suite names or a user whose `path` document's `region` field says US-CA, and a law without an
 * extension.
 */
export function testClocks(opts: { scope?: string; fieldPath?: string } = {}): LegalClocks {
  return LegalClocksSchema.parse({
    laws: [
      { id: "gdpr", name: "GDPR Art. 12(3)", period: { months: 1 }, extension: { months: 2 } },
      { id: "ccpa", name: "CCPA 1798.130", period: { days: 45 }, extension: { days: 45 } },
      { id: "strict", name: "No extension", period: { days: 30 } },
    ],
    rules: [
      ...(opts.scope ? [{ law: "ccpa", via: "scope", scopes: [opts.scope] }] : []),
      { law: "ccpa", via: "field", path: opts.fieldPath ?? "userDirectory/{uid}", field: "region", values: ["US-CA"] },
    ],
    default: "gdpr",
  });
}

/** A registry with the test's legal clocks. */
export const withClocks = (registry: Registry, opts: { scope?: string; fieldPath?: string } = {}): Registry => ({ ...registry, legalClocks: testClocks(opts) });
