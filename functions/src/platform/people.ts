import { getAuth } from "firebase-admin/auth";
import { adminApp } from "./firestore";

/** A staff member as the console names them: their Auth display name and email. */
export interface StaffName {
  name: string | null;
  email: string | null;
}

/** Firebase Auth's getUsers takes at most 100 identifiers per call. */
const LOOKUP_BATCH = 100;

const isStaffAccount = (claims: Record<string, unknown> | undefined) => Array.isArray(claims?.roles) && (claims.roles as unknown[]).length > 0;

/**
 * The names and emails of the staff among `uids` (Auth accounts with a staff role in their custom claims), so a
 * list can say "Clara (compliance)" where the record keeps a uid. Customers are never named: a list of deletion
 * requests or evidence entries carries their uids only. A uid with no Auth account (deleted, or "system") is left
 * out, and the console shows the uid.
 */
export async function staffNames(uids: Iterable<string | null | undefined>): Promise<Record<string, StaffName>> {
  const wanted = [...new Set([...uids].filter((u): u is string => typeof u === "string" && u.length > 0 && u.length <= 128))];
  const out: Record<string, StaffName> = {};
  for (let i = 0; i < wanted.length; i += LOOKUP_BATCH) {
    const { users } = await getAuth(adminApp()).getUsers(wanted.slice(i, i + LOOKUP_BATCH).map((uid) => ({ uid })));
    for (const u of users) if (isStaffAccount(u.customClaims)) out[u.uid] = { name: u.displayName ?? null, email: u.email ?? null };
  }
  return out;
}

/** The uid of the staff account with this email, or null when no staff account has it. */
export async function staffUidForEmail(email: string): Promise<string | null> {
  try {
    const u = await getAuth(adminApp()).getUserByEmail(email);
    return isStaffAccount(u.customClaims) ? u.uid : null;
  } catch (err) {
    if ((err as { code?: string }).code === "auth/user-not-found") return null;
    throw err;
  }
}
