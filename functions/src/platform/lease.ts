import { FieldValue, Timestamp, type DocumentData, type DocumentReference, type DocumentSnapshot, type Transaction } from "firebase-admin/firestore";
import { db } from "./firestore";

/**
 * Leases (`lease: { owner, expiresAt }` on the leased document). A lease says who may work on a record;
 * every step of that work re-reads it in its own transaction (a fence), so a runner that lost its lease can
 * no longer commit anything. A runner loses its lease when it expires, whether or not another runner has
 * taken it since: from then on the record is anyone's to take (another run, the next delivery of a task), so
 * nothing the runner read or decided before can be trusted to stand.
 *
 * Leases run on the wall clock, never on a job's `asOf`: time travel moves business time, not the time
 * other runners see.
 */
/** Runners race for the same lease: its transactions get room to retry. */
export const LEASE_TX = { maxAttempts: 30 } as const;

export interface LeaseHolder {
  owner: string;
  ttlMs: number;
  clock: () => number;
}

export type LeaseState = "free" | "mine" | "taken";

/** This runner's lease expired, or another runner holds it: this runner must stop touching the record. */
export class LeaseLostError extends Error {
  constructor(
    readonly path: string,
    readonly owner: string,
  ) {
    super(`lease on ${path} is no longer held by ${owner}`);
    this.name = "LeaseLostError";
  }
}

export function leaseState(data: DocumentData | undefined, owner: string, wallMs: number): LeaseState {
  const lease = data?.lease as { owner?: unknown; expiresAt?: unknown } | undefined;
  if (!lease || typeof lease.owner !== "string") return "free";
  const expiresAt = lease.expiresAt instanceof Timestamp ? lease.expiresAt.toMillis() : 0;
  // An expired lease is nobody's, its owner's included: the owner lost it at expiry, taken since or not.
  if (expiresAt <= wallMs) return "free";
  return lease.owner === owner ? "mine" : "taken";
}

/** The owner a lease names, live or expired (null without a lease). */
export function leaseOwner(data: DocumentData | undefined): string | null {
  const owner = (data?.lease as { owner?: unknown } | undefined)?.owner;
  return typeof owner === "string" ? owner : null;
}

export function leaseValue(holder: LeaseHolder, owner: string = holder.owner): { owner: string; expiresAt: Timestamp } {
  return { owner, expiresAt: Timestamp.fromMillis(holder.clock() + holder.ttlMs) };
}

/**
 * Takes the lease on `ref` when `canTake(data)` agrees and nobody else holds a live lease. One
 * transaction: two runners racing for the same record cannot both win. Returns the record as read, or
 * null when the lease was not taken.
 */
export async function tryAcquireLease(
  ref: DocumentReference,
  holder: LeaseHolder,
  canTake: (data: DocumentData | undefined) => boolean,
): Promise<DocumentData | null> {
  return db().runTransaction(async (tx) => {
    const snap = await tx.get(ref);
    const data = snap.data();
    if (!canTake(data)) return null;
    if (leaseState(data, holder.owner, holder.clock()) === "taken") return null;
    tx.set(ref, { lease: leaseValue(holder) }, { merge: true });
    return data ?? {};
  }, LEASE_TX);
}

/**
 * The fence: reads the leased record inside the caller's transaction and throws LeaseLostError unless
 * this holder owns the lease and it has not expired. Call it among the transaction's reads; then call `renewLeaseInTx` with the
 * writes, which keeps a long unit's lease alive one step at a time.
 */
export async function fenceLease(tx: Transaction, ref: DocumentReference, holder: LeaseHolder): Promise<DocumentSnapshot> {
  return checkLease(await tx.get(ref), holder);
}

/** The fence's check on a leased record the transaction already read (with its other reads, in one round trip). */
export function checkLease(snap: DocumentSnapshot, holder: LeaseHolder): DocumentSnapshot {
  if (leaseState(snap.data(), holder.owner, holder.clock()) !== "mine") throw new LeaseLostError(snap.ref.path, holder.owner);
  return snap;
}

export function renewLeaseInTx(tx: Transaction, ref: DocumentReference, holder: LeaseHolder, extra: Record<string, unknown> = {}): void {
  tx.update(ref, { lease: leaseValue(holder), ...extra });
}

/** Removes the lease field in the caller's transaction (the record is free for the next runner). */
export function releaseLeaseInTx(tx: Transaction, ref: DocumentReference, extra: Record<string, unknown> = {}): void {
  tx.update(ref, { lease: FieldValue.delete(), ...extra });
}

/** Releases a lease this holder owns; a lease that moved on meanwhile is left alone. */
export async function releaseLease(ref: DocumentReference, holder: LeaseHolder): Promise<boolean> {
  return db().runTransaction(async (tx) => {
    const snap = await tx.get(ref);
    if (leaseState(snap.data(), holder.owner, holder.clock()) !== "mine") return false;
    releaseLeaseInTx(tx, ref);
    return true;
  }, LEASE_TX);
}
