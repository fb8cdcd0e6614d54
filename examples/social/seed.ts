import { getAuth } from "firebase-admin/auth";
import { getStorage } from "firebase-admin/storage";
import { writeGoverned } from "../../functions/src/platform/governed-repo";
import { adminApp, inCell } from "../../functions/src/platform/firestore";
import { policy, registryPolicy, useRegistryForTests } from "../../functions/src/platform/registry";
import { defaultBucket } from "../../functions/src/platform/storage";
import { findRequest, openDeletionRequest } from "../../functions/src/requests/index";
import { SOCIAL_ANALYTICS_DOCS, SOCIAL_DOCS, SOCIAL_OBJECTS, SOCIAL_PASSWORD, SOCIAL_USERS } from "./data";
import { isSocialRegistry, SOCIAL_ANALYTICS, socialPublished, socialRegistry } from "./registry";

/** The app has no scope kind: its users belong to no tenant, so every governed write names none. */
export const NO_SCOPE = "";

/**
 * Makes this process enforce the social app's registry instead of the bundled AtlasMart one (the engine's
 * test seam, platform/registry.ts). Returns the undo.
 */
export function useSocialRegistry(): () => void {
  useRegistryForTests(socialRegistry(), socialPublished());
  return () => useRegistryForTests(undefined);
}

export interface SocialSeedResult {
  /** Documents of the primary database. */
  documents: number;
  /** Documents of the analytics database (the activity log). */
  analytics: number;
  users: number;
  /** Objects uploaded to the default bucket (0 without `withObjects`). */
  objects: number;
}

/**
 * Seeds the social demo through the engine's one write path for governed documents (`writeGoverned`): the
 * retention fields come from the social registry by path, never from the data. The social registry must be
 * the one this process enforces ({@link useSocialRegistry}); seeding under another would stamp AtlasMart's
 * classes, or refuse the paths as UNKNOWN_POLICY, so it is refused up front. Parents come before children in
 * SOCIAL_DOCS. A second run rewrites the business fields and keeps each document's retention (its anchor, its
 * state, its holds), as the write path does for any rewrite. The avatars and uploads go to the project's default
 * bucket with `withObjects` (the Storage emulator: `--only ...,storage`); each upload is a new generation.
 */
export async function seedSocial(opts: { nowMs: number; withAuth?: boolean; analytics?: boolean; withObjects?: boolean }): Promise<SocialSeedResult> {
  if (!isSocialRegistry(registryPolicy().registry)) {
    throw new Error(`seedSocial: the active registry is ${policy().version} of another app; call useSocialRegistry() first`);
  }
  for (const d of SOCIAL_DOCS) await writeGoverned(d.path, d.data, NO_SCOPE, opts.nowMs);
  // The activity log lives in the app's second governed database: written there, under that database's part of the
  // registry (its retention class comes from the analytics collection rule). `analytics: false` seeds the primary
  // alone (a restored copy of it).
  const analytics = opts.analytics !== false;
  if (analytics) await seedSocialAnalytics(opts.nowMs);
  if (opts.withAuth !== false) await seedSocialUsers();
  if (opts.withObjects === true) await seedSocialObjects();
  return {
    documents: SOCIAL_DOCS.length,
    analytics: analytics ? SOCIAL_ANALYTICS_DOCS.length : 0,
    users: opts.withAuth === false ? 0 : SOCIAL_USERS.length,
    objects: opts.withObjects === true ? SOCIAL_OBJECTS.length : 0,
  };
}

/**
 * Seeds the activity log into the analytics database, or into `databaseId` (a copy of it), through the governed
 * write path under that database's part of the registry.
 */
export async function seedSocialAnalytics(nowMs: number, databaseId?: string): Promise<number> {
  await inCell(
    SOCIAL_ANALYTICS,
    async () => {
      for (const d of SOCIAL_ANALYTICS_DOCS) await writeGoverned(d.path, d.data, NO_SCOPE, nowMs);
    },
    databaseId,
  );
  return SOCIAL_ANALYTICS_DOCS.length;
}

/** Uploads the demo's avatars and uploads to the default bucket; returns each object's name and generation. */
export async function seedSocialObjects(): Promise<Map<string, string>> {
  const bucket = getStorage(adminApp()).bucket(defaultBucket());
  const generations = new Map<string, string>();
  for (const o of SOCIAL_OBJECTS) {
    const file = bucket.file(o.name);
    await file.save(o.body, { resumable: false, contentType: o.contentType });
    const [m] = await file.getMetadata();
    generations.set(o.name, String(m.generation));
  }
  return generations;
}

/** Creates or updates the Auth users, with their claims (staff roles; members carry none). */
export async function seedSocialUsers(): Promise<void> {
  const auth = getAuth(adminApp());
  for (const u of SOCIAL_USERS) {
    try {
      await auth.updateUser(u.uid, { email: u.email, displayName: u.displayName, password: SOCIAL_PASSWORD });
    } catch (err) {
      if ((err as { code?: string }).code !== "auth/user-not-found") throw err;
      await auth.createUser({ uid: u.uid, email: u.email, displayName: u.displayName, password: SOCIAL_PASSWORD });
    }
    await auth.setCustomUserClaims(u.uid, u.claims);
  }
}

/** Whose erasure the scenario asks for: Ana, in her grace period from the moment of seeding. */
export const SCENARIO_REQUESTER = "u-ana";

/**
 * What `npm run start:social` shows an officer: Ana has asked for her account's erasure today, so the console's
 * Requests list has her request in its grace period, and her chats can be held before the purge takes it. Made by
 * the product's own code (openDeletionRequest soft-deletes what her erasure covers), once: a second run changes
 * nothing.
 */
export async function seedSocialScenario(opts: { nowMs: number }): Promise<{ requests: number }> {
  const existing = await findRequest({ latestOf: SCENARIO_REQUESTER }).then(
    () => true,
    (err: unknown) => {
      if ((err as { reason?: string }).reason === "REQUEST_NOT_FOUND") return false;
      throw err;
    },
  );
  if (!existing) {
    await openDeletionRequest({ subject: { type: "user", uid: SCENARIO_REQUESTER, tenantId: NO_SCOPE }, source: "user", reason: "Leaving the app (demo)", actor: { type: "user", id: SCENARIO_REQUESTER }, nowMs: opts.nowMs });
  }
  return { requests: 1 };
}
