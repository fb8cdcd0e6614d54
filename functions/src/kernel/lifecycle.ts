import { DomainError } from "./errors";

export const LIFECYCLE_STATES = ["ACTIVE", "SOFT_DELETED", "ARCHIVED", "LEGAL_HOLD", "PURGE_ELIGIBLE", "PURGED"] as const;
export type LifecycleState = (typeof LIFECYCLE_STATES)[number];

/** The lifecycle state machine (docs/OVERVIEW.md). Anything not listed is refused. */
const ALLOWED: Readonly<Record<LifecycleState, readonly LifecycleState[]>> = {
  ACTIVE: ["SOFT_DELETED", "LEGAL_HOLD"],
  SOFT_DELETED: ["ACTIVE", "ARCHIVED", "LEGAL_HOLD", "PURGE_ELIGIBLE"],
  ARCHIVED: ["LEGAL_HOLD", "PURGE_ELIGIBLE"],
  LEGAL_HOLD: ["ACTIVE", "SOFT_DELETED", "ARCHIVED"],
  PURGE_ELIGIBLE: ["PURGED"],
  PURGED: [],
};

export function isLifecycleState(value: unknown): value is LifecycleState {
  return typeof value === "string" && (LIFECYCLE_STATES as readonly string[]).includes(value);
}

export function canTransition(from: LifecycleState, to: LifecycleState): boolean {
  return ALLOWED[from].includes(to);
}

export function invalidTransitionReason(from: string, to: string): string {
  return `INVALID_LIFECYCLE_${from}_TO_${to}`;
}

/** Throws `INVALID_LIFECYCLE_<FROM>_TO_<TO>` (failed-precondition) unless the move is in the machine. */
export function assertTransition(from: LifecycleState, to: LifecycleState): void {
  if (!canTransition(from, to)) {
    throw new DomainError("failed-precondition", invalidTransitionReason(from, to), `Lifecycle move ${from} -> ${to} is not allowed.`, {
      from,
      to,
    });
  }
}
