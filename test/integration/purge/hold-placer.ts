/**
 * A second OS process for the hold-fence concurrency test: places retention holds through the real hold code,
 * each after its own delay, while the test process runs a purge on the same emulator database. Prints one
 * JSON line with the outcome of each placement.
 * Usage: tsx hold-placer.ts '{"targets": ["path", ...], "delaysMs": [ms, ...]}'
 */
import { DomainError } from "../../../functions/src/kernel/errors";
import { db } from "../../../functions/src/platform/firestore";
import { placeHold } from "../../../functions/src/holds/service";

interface Args {
  targets: string[];
  delaysMs: number[];
}

async function main(): Promise<void> {
  const args = JSON.parse(process.argv[2] ?? "{}") as Args;
  const started = Date.now();
  const results = await Promise.all(
    args.targets.map(async (target, i) => {
      await new Promise((r) => setTimeout(r, args.delaysMs[i] ?? 0));
      try {
        const { holdId } = await placeHold({ targetPath: target, reasonCode: "LITIGATION", releaseAfterMs: null, actor: { type: "staff", id: "c-2001" }, nowMs: started });
        return { target, holdId, atMs: Date.now() - started };
      } catch (err) {
        if (err instanceof DomainError) return { target, holdId: null, error: err.reason, atMs: Date.now() - started };
        throw err;
      }
    }),
  );
  process.stdout.write(`${JSON.stringify({ results })}\n`);
  // A failed transaction's rollback is sent in the background: wait for it, or its locks outlive us.
  await db().terminate();
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`hold placer failed: ${String(err)}\n`);
    process.exit(1);
  },
);
