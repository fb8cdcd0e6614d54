import { getAuth } from "firebase-admin/auth";
import { adminApp } from "./firestore";

/** What deleting one Auth account did: removed it now, or found it gone (an earlier attempt, or removed by other means). */
export type AccountDeleteOutcome = "deleted" | "already-absent";

/**
 * Deletes one Firebase Auth account, idempotently: an account that is already gone is `already-absent`, not an error,
 * so a retried erasure step records the same effect. Any other failure throws, and the step runs again.
 */
export async function deleteAuthAccount(uid: string): Promise<AccountDeleteOutcome> {
  try {
    await getAuth(adminApp()).deleteUser(uid);
    return "deleted";
  } catch (err) {
    if ((err as { code?: string }).code !== "auth/user-not-found") throw err;
    return "already-absent";
  }
}
