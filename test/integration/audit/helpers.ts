import { FINDING_CODES, type Finding, type FindingCode } from "../../../functions/src/audit/rules";
import { scanRetention, type AuditResult } from "../../../functions/src/audit/scan";
import { seedDemo } from "../../../examples/atlasmart/seed";
import { clearAuth, clearFirestore } from "../../helpers/emulator";

/** A fresh demo: empty emulators, then the AtlasMart seed with its Auth users. */
export async function freshDemo(nowMs: number = Date.now()): Promise<void> {
  await clearFirestore();
  await clearAuth();
  await seedDemo({ nowMs, withAuth: true });
}

export function audit(nowMs: number = Date.now()): Promise<AuditResult> {
  return scanRetention({ nowMs, pageSize: 7 });
}

/** Findings as "CODE path" strings: a failing assertion then shows exactly what the audit saw. */
export const lines = (fs: readonly Finding[]): string[] => fs.map((f) => `${f.code} ${f.path}`).sort();

export async function expectClean(nowMs?: number): Promise<AuditResult> {
  const r = await audit(nowMs);
  if (!r.ok) throw new Error(`expected a clean audit, got:\n${r.findings.map((f) => `  ${f.code} ${f.path}: ${f.detail}`).join("\n")}`);
  return r;
}

export function codeCounts(r: AuditResult): Partial<Record<FindingCode, number>> {
  return Object.fromEntries(FINDING_CODES.filter((c) => r.byCode[c] > 0).map((c) => [c, r.byCode[c]]));
}
