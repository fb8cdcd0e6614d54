import { HttpsError, onCall, type CallableRequest } from "firebase-functions/v2/https";
import { z } from "zod";
import { DomainError } from "../../domain/errors";
import { log } from "../../infra/logs";

export type Role = "compliance" | "retention-admin";

/** The authenticated caller, from custom claims: `tenantId` for app users, `roles` for staff. */
export interface Caller {
  uid: string;
  tenantId: string | null;
  roles: Role[];
}

export function callerFrom(req: CallableRequest): Caller {
  if (!req.auth) throw new HttpsError("unauthenticated", "Sign in first.", { reason: "UNAUTHENTICATED" });
  const token = req.auth.token as Record<string, unknown>;
  const roles = Array.isArray(token.roles)
    ? token.roles.filter((r): r is Role => r === "compliance" || r === "retention-admin")
    : [];
  return { uid: req.auth.uid, tenantId: typeof token.tenantId === "string" ? token.tenantId : null, roles };
}

export function requireRole(caller: Caller, role: Role): void {
  if (!caller.roles.includes(role)) {
    throw new HttpsError("permission-denied", `This needs the ${role} role.`, { reason: role === "compliance" ? "NOT_COMPLIANCE" : "NOT_RETENTION_ADMIN" });
  }
}

/** Maps a domain error to its HttpsError (STYLE.md table); the machine code goes in details.reason. */
export function toHttpsError(err: DomainError): HttpsError {
  return new HttpsError(err.kind, err.message, { reason: err.reason, ...err.details });
}

/**
 * Wraps a callable: zod-parse the payload (invalid-argument with readable issues, nothing written),
 * authenticate, run, and map domain errors. Unknown errors are rethrown untouched: the SDK turns them into
 * INTERNAL without sending their text to the client, and logs them.
 */
export function callable<S extends z.ZodType, R>(
  name: string,
  schema: S,
  handler: (input: z.infer<S>, caller: Caller, req: CallableRequest) => Promise<R>,
) {
  return onCall({ cors: false, enforceAppCheck: false }, async (req: CallableRequest): Promise<R> => {
    const caller = callerFrom(req);
    const parsed = schema.safeParse(req.data ?? {});
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => ({ path: i.path.join("."), message: i.message }));
      throw new HttpsError("invalid-argument", `Invalid ${name} payload: ${issues.map((i) => `${i.path || "(root)"}: ${i.message}`).join("; ")}`, {
        reason: "INVALID_ARGUMENT",
        issues,
      });
    }
    try {
      return await handler(parsed.data, caller, req);
    } catch (err) {
      if (err instanceof DomainError) {
        log.warn("callable.rejected", { callable: name, reason: err.reason });
        throw toHttpsError(err);
      }
      throw err;
    }
  });
}
