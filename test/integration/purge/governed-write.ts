/**
 * Governed documents written as an app's server would write them, with the retention their registry class gives
 * them. Free of the test runner, so a second OS process (subject-writer.ts) writes them the same way.
 */
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { computeExpireAt } from "../../../functions/src/kernel/retention";
import { freshGovernedFields } from "../../../functions/src/kernel/governed-write";
import { governedToFirestore } from "../../../functions/src/platform/governed-doc";
import { policy } from "../../../functions/src/platform/registry";
import { db } from "../../helpers/emulator";

/**
 * The seeding time: in the past, so that a request an Auth trigger might open at wall-clock time (when the
 * functions emulator runs the backstop) can never be due at the suites' asOf.
 */
export const T0 = Date.parse("2026-06-01T00:00:00Z");
export interface PutOptions {
  tenantId?: string;
  /** Age of the retention anchor at T0. */
  ageDays?: number;
  /** For inherited classes: the parent's expiry. */
  parentExpireAtMs?: number | null;
}

/** Writes a governed document with the retention its registry class gives it (ACTIVE, unheld); `writeTimeMs` is its commit time. */
export async function putGoverned(path: string, data: Record<string, unknown>, opts: PutOptions = {}): Promise<{ expireAtMs: number | null; writeTimeMs: number }> {
  const pol = policy();
  const cls = pol.classForPath(path);
  if (!cls) throw new Error(`${path} is in no class`);
  const createdAtMs = T0 - (opts.ageDays ?? 0) * DAY_MS;
  const expireAtMs = computeExpireAt(cls, createdAtMs, { parentExpireAtMs: opts.parentExpireAtMs ?? null });
  const written = await db()
    .doc(path)
    .set({
      ...data,
      ...governedToFirestore(freshGovernedFields(cls, { tenantId: opts.tenantId ?? "t-acme", policyVersion: pol.version, createdAtMs, expireAtMs }), "set"),
    });
  return { expireAtMs, writeTimeMs: written.writeTime.toMillis() };
}
