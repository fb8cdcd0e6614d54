/**
 * Domain errors carry a stable machine code (`LEGAL_HOLD`, `INVALID_LIFECYCLE_ACTIVE_TO_PURGED`, ...)
 * and a kind. One module at the edge (`entrypoints/callable/errors.ts`) maps kinds to HttpsError codes.
 */
export type DomainErrorKind =
  | "unauthenticated"
  | "permission-denied"
  | "invalid-argument"
  | "not-found"
  | "failed-precondition"
  | "already-exists"
  | "resource-exhausted";

export class DomainError extends Error {
  constructor(
    readonly kind: DomainErrorKind,
    readonly reason: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = "DomainError";
  }
}

export const preconditionFailed = (reason: string, message: string, details?: Record<string, unknown>) =>
  new DomainError("failed-precondition", reason, message, details);
export const notFound = (reason: string, message: string) => new DomainError("not-found", reason, message);
export const permissionDenied = (reason: string, message: string) => new DomainError("permission-denied", reason, message);
