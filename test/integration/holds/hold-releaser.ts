/**
 * A second OS process for the concurrent-release test (ttl-coverage.test.ts): releases one hold through the real
 * release code, on the test registry with order tracking, while the test process releases another. Prints "ready"
 * once its modules are loaded, waits for its delay, releases, and prints one JSON line with the outcome.
 * Usage: tsx hold-releaser.ts '{"holdId": "...", "batchSize": 1, "delayMs": 0}'
 */
import { releaseHoldById } from "../../../functions/src/holds/service";
import { db } from "../../../functions/src/platform/firestore";
import { useRegistryForTests } from "../../../functions/src/platform/registry";
import { withOrderTracking } from "../../helpers/policy";

interface Args {
  holdId: string;
  batchSize: number;
  delayMs: number;
  nowMs: number;
}

async function main(): Promise<void> {
  const args = JSON.parse(process.argv[2] ?? "{}") as Args;
  useRegistryForTests(withOrderTracking());
  process.stdout.write("ready\n");
  await new Promise((r) => setTimeout(r, args.delayMs));
  const { released } = await releaseHoldById({ holdId: args.holdId, reason: "case closed", actor: { type: "staff", id: "c-2003" }, nowMs: args.nowMs }, { batchSize: args.batchSize });
  process.stdout.write(`${JSON.stringify({ released })}\n`);
  // A failed transaction's rollback is sent in the background: wait for it, or its locks outlive us.
  await db().terminate();
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`hold releaser failed: ${String(err)}\n`);
    process.exit(1);
  },
);
