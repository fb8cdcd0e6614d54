import { getAuth } from "firebase-admin/auth";
import { getStorage } from "firebase-admin/storage";
import { DAY_MS } from "../../functions/src/kernel/policy";
import { computeExpireAt } from "../../functions/src/kernel/retention";
import { freshGovernedFields } from "../../functions/src/kernel/governed-write";
import { DEMO_DOCS, DEMO_OBJECTS, DEMO_PASSWORD, DEMO_USERS } from "./data";
import { adminApp, db } from "../../functions/src/platform/firestore";
import { governedToFirestore, readGovernedStrict } from "../../functions/src/platform/governed-doc";
import { policy } from "../../functions/src/platform/registry";
import { defaultBucket } from "../../functions/src/platform/storage";

export interface SeedResult {
  documents: number;
  users: number;
}

/**
 * Seeds the AtlasMart demo with fixed ids. Idempotent: a second run leaves the same data. Each document is
 * reset to its seeded business fields and an ACTIVE, unheld state; its retention anchor (`createdAt`) is
 * kept from the first seed, so TTL values do not move when the seed runs again.
 */
export async function seedDemo(opts: { nowMs: number; withAuth?: boolean }): Promise<SeedResult> {
  const pol = policy();
  const firestore = db();
  const existing = await firestore.getAll(...DEMO_DOCS.map((d) => firestore.doc(d.path)));
  const anchors = new Map(existing.map((s) => [s.ref.path, readGovernedStrict(s.data())?.createdAtMs ?? null]));
  const expiryByPath = new Map<string, number | null>();
  const batch = firestore.batch();
  // Parents come before children in DEMO_DOCS, so an inherited expiry can read its parent's value.
  for (const d of DEMO_DOCS) {
    const cls = pol.classForPath(d.path);
    if (!cls) throw new Error(`demo document ${d.path} is in no retention class`);
    const createdAtMs = anchors.get(d.path) ?? opts.nowMs - (d.ageDays ?? 0) * DAY_MS;
    const parent = pol.expiryParentOf(d.path);
    const expireAtMs = computeExpireAt(cls, createdAtMs, { parentExpireAtMs: parent ? (expiryByPath.get(parent) ?? null) : null });
    expiryByPath.set(d.path, expireAtMs);
    const timestamps = Object.fromEntries((d.timestampFields ?? []).map((f) => [f, new Date(createdAtMs)]));
    batch.set(firestore.doc(d.path), {
      ...d.data,
      ...timestamps,
      ...governedToFirestore(freshGovernedFields(cls, { tenantId: d.tenantId, policyVersion: pol.version, createdAtMs, expireAtMs }), "set"),
    });
  }
  // set() without merge replaces each document, so leftovers of a demo run (soft-delete marks) go too.
  await batch.commit();
  if (opts.withAuth !== false) await seedDemoUsers();
  return { documents: DEMO_DOCS.length, users: opts.withAuth === false ? 0 : DEMO_USERS.length };
}

export async function seedDemoUsers(): Promise<void> {
  const auth = getAuth(adminApp());
  for (const u of DEMO_USERS) {
    try {
      await auth.updateUser(u.uid, { email: u.email, displayName: u.displayName, password: DEMO_PASSWORD });
    } catch (err) {
      if ((err as { code?: string }).code !== "auth/user-not-found") throw err;
      await auth.createUser({ uid: u.uid, email: u.email, displayName: u.displayName, password: DEMO_PASSWORD });
    }
    await auth.setCustomUserClaims(u.uid, u.claims);
  }
}

/** Uploads the demo's objects (DEMO_OBJECTS) to the default bucket; returns each name's generation. */
export async function seedDemoObjects(): Promise<Map<string, string>> {
  const bucket = getStorage(adminApp()).bucket(defaultBucket());
  const generations = new Map<string, string>();
  for (const o of DEMO_OBJECTS) {
    const file = bucket.file(o.name);
    await file.save(o.body, { resumable: false, contentType: o.contentType });
    generations.set(o.name, String((await file.getMetadata())[0].generation));
  }
  return generations;
}
