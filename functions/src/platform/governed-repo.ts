import type { DocumentReference, Transaction } from "firebase-admin/firestore";
import { prepareGovernedWrite } from "../kernel/governed-write";
import type { GovernedFields } from "../kernel/governed";
import { db } from "./firestore";
import { governedToFirestore, readGovernedStrict } from "./governed-doc";
import { policy } from "./registry";

/**
 * The one write path for governed documents (docs/OVERVIEW.md, "Governed data"). Reads the current document and,
 * for inherited classes, its parent, asks the domain for the retention fields, and writes business data and
 * retention fields together in the caller's transaction. Reads happen first, as Firestore requires.
 */
export async function writeGovernedInTx(
  tx: Transaction,
  ref: DocumentReference,
  data: Record<string, unknown>,
  tenantId: string,
  nowMs: number,
): Promise<GovernedFields> {
  const pol = policy();
  const parentPath = pol.expiryParentOf(ref.path);
  const [current, parent] = await Promise.all([tx.get(ref), parentPath ? tx.get(db().doc(parentPath)) : Promise.resolve(null)]);
  const parentFields = parent ? readGovernedStrict(parent.data()) : null;
  const fields = prepareGovernedWrite(
    {
      path: ref.path,
      data,
      tenantId,
      existing: readGovernedStrict(current.data()),
      parentExpireAtMs: parentFields?.expireAtMs ?? null,
      nowMs,
    },
    pol,
  );
  tx.set(ref, { ...data, ...governedToFirestore(fields) }, { merge: true });
  return fields;
}

/** Convenience: one governed write in a transaction of its own. */
export function writeGoverned(path: string, data: Record<string, unknown>, tenantId: string, nowMs: number): Promise<GovernedFields> {
  return db().runTransaction((tx) => writeGovernedInTx(tx, db().doc(path), data, tenantId, nowMs));
}
