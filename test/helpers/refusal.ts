import { HttpsError } from "firebase-functions/v2/https";
import { DomainError } from "../../functions/src/kernel/errors";

/**
 * The refusal a call ends in, as `kind/REASON` (a domain error, or the HttpsError a role check at a callable's edge
 * sends, with its reason); `none` when it succeeds. Any other error is rethrown: a crash is not a refusal.
 */
export async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (err instanceof DomainError) return `${err.kind}/${err.reason}`;
    if (err instanceof HttpsError) return `${err.code}/${(err.details as { reason?: string } | undefined)?.reason}`;
    throw err;
  }
  return "none";
}
