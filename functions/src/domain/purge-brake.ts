import { hashCanonical } from "./canonical";

/** The registry's mass-deletion brake (`registry.purge`). */
export interface BrakeLimits {
  brakeMaxDocuments: number;
  brakeMaxShareOfClass: number;
  brakeMinClassSize: number;
}

export interface BrakeViolation {
  kind: "TOTAL" | "CLASS_SHARE";
  retentionClass: string | null;
  /** Documents the run would delete (in total, or of the class). */
  count: number;
  /** The class's current document count (CLASS_SHARE only). */
  classSize: number | null;
  limit: number;
}

export interface BrakeResult {
  tripped: boolean;
  total: number;
  violations: BrakeViolation[];
}

/**
 * The mass-deletion brake. A run trips it when it would delete more than `brakeMaxDocuments` documents,
 * or more than `brakeMaxShareOfClass` of any class that has at least `brakeMinClassSize` documents (small
 * classes are exempt: deleting 3 of 4 test documents is not a mass deletion). Share is measured against
 * the class's size before the run, counting the documents the run would delete.
 */
export function evaluateBrake(
  deleteCountsByClass: Readonly<Record<string, number>>,
  classSizes: Readonly<Record<string, number>>,
  limits: BrakeLimits,
): BrakeResult {
  const violations: BrakeViolation[] = [];
  const total = Object.values(deleteCountsByClass).reduce((a, b) => a + b, 0);
  if (total > limits.brakeMaxDocuments) {
    violations.push({ kind: "TOTAL", retentionClass: null, count: total, classSize: null, limit: limits.brakeMaxDocuments });
  }
  for (const cls of Object.keys(deleteCountsByClass).sort()) {
    const count = deleteCountsByClass[cls] ?? 0;
    // A class whose size is unknown is counted as at least what the run deletes of it.
    const size = Math.max(classSizes[cls] ?? 0, count);
    if (size < limits.brakeMinClassSize || count === 0) continue;
    if (count / size > limits.brakeMaxShareOfClass) {
      violations.push({ kind: "CLASS_SHARE", retentionClass: cls, count, classSize: size, limit: limits.brakeMaxShareOfClass });
    }
  }
  return { tripped: violations.length > 0, total, violations };
}

/**
 * The key a retention-admin's approval names. It is derived from what the run would delete (each unit
 * and its manifest hash), so an approval covers exactly the deletion set that was reviewed: if the data
 * changes, the key changes and the brake asks again.
 */
export function brakeRunKey(units: readonly { unitKey: string; manifestHash: string }[]): string {
  const sorted = [...units].sort((a, b) => (a.unitKey < b.unitKey ? -1 : a.unitKey > b.unitKey ? 1 : 0));
  return hashCanonical({ brake: "v1", units: sorted.map((u) => [u.unitKey, u.manifestHash]) }).slice(0, 32);
}
