import { createRequire } from "node:module";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The layering rules (.dependency-cruiser.cjs, run on functions/src by `npm run lint`) catch what they are
 * meant to catch: run over a small tree that breaks each rule once, beside files that follow them.
 */
const require = createRequire(import.meta.url);
const config = require("../../../.dependency-cruiser.cjs") as { forbidden: unknown[] };

interface Violation {
  rule: { name: string };
  from: string;
  to: string;
}

async function violations(): Promise<string[]> {
  const { cruise } = (await import("dependency-cruiser")) as unknown as {
    cruise: (files: string[], options: Record<string, unknown>) => Promise<{ output: { summary: { violations: Violation[] } } }>;
  };
  const result = await cruise(["functions/src", "console/src"], {
    baseDir: join(__dirname, "..", "..", "fixtures", "layering"),
    ruleSet: { forbidden: config.forbidden },
    validate: true,
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
  });
  return result.output.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`).sort();
}

describe("the layering rules", () => {
  it("fail a rule file that imports Firebase, a wing reaching into another wing's store, an adapter on a wing, a cycle, a contract or console that is not browser-safe", async () => {
    const found = await violations();
    expect(found).toEqual(
      expect.arrayContaining([
        "rules-are-pure: functions/src/kernel/leaky.ts -> firebase-admin/firestore",
        "rules-import-only-rules: functions/src/purge/rules/reaches-store.ts -> functions/src/purge/store.ts",
        "wing-through-its-index: functions/src/requests/reaches-into-purge.ts -> functions/src/purge/store.ts",
        "platform-imports-no-wing: functions/src/platform/knows-a-wing.ts -> functions/src/requests/through-index.ts",
        "no-cycles: functions/src/holds/a.ts -> functions/src/holds/b.ts",
        "contract-is-pure: functions/src/contract/reaches-a-wing.ts -> functions/src/requests/through-index.ts",
        "contract-reaches-no-node: functions/src/contract/reaches-node.ts -> crypto",
        "browser-takes-browser-code: console/src/reaches-a-wing.ts -> functions/src/requests/through-index.ts",
        "browser-reaches-no-node: console/src/reaches-node.ts -> crypto",
      ]),
    );
    // Going through the other wing's index is allowed.
    expect(found.filter((v) => v.includes("through-index.ts ->"))).toEqual([]);
    // The contract may use zod and a pure kernel module; a kernel module may use Node (no contract reaches it).
    expect(found.filter((v) => v.includes("contract/fine.ts") || v.includes("kernel/digest.ts") || v.includes("kernel/clean.ts"))).toEqual([]);
    // The console may bundle the contract, a pure kernel module and the report's charts.
    expect(found.filter((v) => v.startsWith("browser-") && v.includes("console/src/fine.ts"))).toEqual([]);
  }, 60_000);
});
