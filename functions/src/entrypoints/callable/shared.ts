import { HttpsError, onCall, type CallableOptions, type CallableRequest } from "firebase-functions/v2/https";
import { z } from "zod";
import { FUNCTION_SECRETS } from "../../config/params";
import { DomainError } from "../../kernel/errors";
import { EvidenceKeyMissingError } from "../../evidence/index";
import type { Actor } from "../../evidence/rules";
import { log } from "../../platform/logs";
import { policy } from "../../platform/registry";
import { settings } from "../../platform/settings";

export type Role = "compliance" | "retention-admin";

/**
 * The authenticated caller, from custom claims: `tenantId`, an app user's scope (the claim the registry's
 * `subjects.user.scopeLookups` names, e.g. `tenantId`), and `roles` for staff.
 */
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
  const claim = policy().scope ? policy().subjects.user.scopeLookups.find((l) => l.via === "claim")?.claim : undefined;
  const scope = claim === undefined ? undefined : token[claim];
  return { uid: req.auth.uid, tenantId: typeof scope === "string" && scope ? scope : null, roles };
}

export function requireRole(caller: Caller, role: Role): void {
  if (!caller.roles.includes(role)) {
    throw new HttpsError("permission-denied", `This needs the ${role} role.`, { reason: role === "compliance" ? "NOT_COMPLIANCE" : "NOT_RETENTION_ADMIN" });
  }
}

/** Maps a domain error to its HttpsError (the table in docs/decisions/0012-requests-holds-callables.md); the machine code goes in details.reason. */
export function toHttpsError(err: DomainError): HttpsError {
  return new HttpsError(err.kind, err.message, { reason: err.reason, ...err.details });
}

/**
 * A callable that cannot sign its evidence (no evidence key: a deployment without the secret bound, or emulators
 * started without functions/.secret.local) refuses with a reason its caller can read and act on, instead of the
 * opaque INTERNAL an unknown error becomes. Nothing is written: evidence is appended inside the work's transaction,
 * and the missing key stops it before the commit.
 */
export function evidenceKeyMissing(err: EvidenceKeyMissingError): HttpsError {
  return new HttpsError("failed-precondition", err.message, { reason: err.reason });
}

/**
 * App Check for a user-facing callable: with enforcement on (the default; off only on the emulators), a
 * request without a verified App Check token is refused before anything else, with a reason the client can
 * act on. The SDK's own `enforceAppCheck` would read its setting once, when the module loads, and answer a bare
 * "Unauthenticated"; here the setting is read per call, like every other setting, and the reason is explicit.
 * With the SDK's enforcement off, an invalid token leaves `req.app` unset, so it is refused here too.
 */
export function requireAppCheck(req: Pick<CallableRequest, "app">, enforce: boolean): void {
  if (enforce && !req.app) {
    throw new HttpsError("unauthenticated", "This app could not be verified (App Check).", { reason: "APP_CHECK_REQUIRED" });
  }
}

export interface CallableSettings extends Pick<CallableOptions, "timeoutSeconds" | "memory"> {
  /** A user-facing callable: App Check is required when `RETENTION_ENFORCE_APP_CHECK` is on. */
  appCheck?: boolean;
}

/**
 * Wraps a callable: App Check where it is required, authenticate, zod-parse the payload (invalid-argument
 * with readable issues, nothing written), run, and map domain errors (and a missing evidence key, which is not a
 * refusal of the domain but must still be readable). Unknown errors are rethrown untouched:
 * the SDK turns them into INTERNAL without sending their text to the client, and logs them.
 */
export function callable<S extends z.ZodType, R>(
  name: string,
  schema: S,
  handler: (input: z.infer<S>, caller: Caller, req: CallableRequest) => Promise<R>,
  { appCheck = false, ...resources }: CallableSettings = {},
) {
  // Every callable may append evidence, so every one binds the evidence key (config/params.ts#FUNCTION_SECRETS).
  return onCall({ cors: false, enforceAppCheck: false, secrets: FUNCTION_SECRETS, ...resources }, async (req: CallableRequest): Promise<R> => {
    if (appCheck) requireAppCheck(req, settings.enforceAppCheck());
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
      if (err instanceof EvidenceKeyMissingError) {
        log.error("callable.evidence_key_missing", { callable: name, reason: err.reason });
        throw evidenceKeyMissing(err);
      }
      throw err;
    }
  });
}

/** Who acted, for evidence: staff when the caller holds a staff role, the user otherwise. */
export function actorOf(caller: Caller): Actor {
  return { type: caller.roles.length > 0 ? "staff" : "user", id: caller.uid };
}

/** Bounded input shapes shared by the callable schemas (the contract's, one source with the typed client). */
export { inputs } from "../../contract/inputs";
