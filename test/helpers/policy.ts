import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PolicyIndex } from "../../functions/src/kernel/policy";
import { RegistrySchema, type Registry } from "../../functions/src/kernel/policy-schema";

export const repoRoot = join(import.meta.dirname, "..", "..");

/** The published v1 registry, parsed the same way the build does. */
export function loadV1(): Registry {
  return RegistrySchema.parse(JSON.parse(readFileSync(join(repoRoot, "policies", "versions", "v1.json"), "utf8")));
}

export const policyV1 = (): PolicyIndex => new PolicyIndex(loadV1());

/** A published registry version by name (`v1`, `v2`, ...), parsed the same way the build does. */
export function loadVersion(version: string): Registry {
  return RegistrySchema.parse(JSON.parse(readFileSync(join(repoRoot, "policies", "versions", `${version}.json`), "utf8")));
}

/** The v2 registry: a tenant's closure archives its finance records (data map action `archive`). */
export const policyV2 = (): PolicyIndex => new PolicyIndex(loadVersion("v2"));

/** The version the functions enforce: the last one in the lock file. */
export function loadCurrent(): Registry {
  const lock = JSON.parse(readFileSync(join(repoRoot, "policies", "published.lock.json"), "utf8")) as { version: string }[];
  return loadVersion(lock[lock.length - 1]!.version);
}

export const policyCurrent = (): PolicyIndex => new PolicyIndex(loadCurrent());

/** The order tracking collection of `withOrderTracking`: a TTL class under a holdable parent (an order). */
export const TRACKING_PATTERN = "tenants/{tenantId}/orders/{orderId}/tracking/{trackingId}";

/**
 * A test registry: `base` (the current version by default) plus order tracking events, a TTL class (30 days)
 * under orders, which holds may target. `holdBehaviour` "deny" gives the shape the registry check refuses (a
 * class a hold on the order covers but could not flag).
 */
export function withOrderTracking(base: Registry = loadCurrent(), holdBehaviour: "allow" | "deny" = "allow"): Registry {
  return {
    ...base,
    classes: [
      ...base.classes,
      {
        id: "order-tracking-30d",
        description: "Carrier tracking events of an order, kept 30 days by TTL.",
        durationDays: 30,
        expiryIsBusinessFact: false,
        mechanism: "ttl",
        holdBehaviour,
        archive: { required: false },
        recovery: "PITR 7 days and exports 35 days.",
        inheritsParentExpiry: false,
        userDeletable: true,
      },
    ],
    collections: [...base.collections, { pattern: TRACKING_PATTERN, retentionClass: "order-tracking-30d", anchorField: "createdAt" }],
  };
}

/**
 * A small app's registry on the current version's classes, control plane and hold reasons: a single-tenant app
 * (no scope kind: `users/{uid}` and `notes/{noteId}`) when `scope` is undefined, otherwise one whose users belong
 * to a scope of that name and key (`workspace`, `workspaceId`: `workspaces/{workspaceId}/docs/{docId}`).
 */
export function smallAppRegistry(scope?: { name: string; key: string; collection: string }): Registry {
  const base = loadCurrent();
  const common = {
    version: base.version,
    effectiveFrom: base.effectiveFrom,
    description: "A small app (test registry).",
    classes: base.classes,
    controlPlane: base.controlPlane,
    holdReasons: base.holdReasons,
    purge: base.purge,
    processedEventTtlDays: base.processedEventTtlDays,
  };
  if (!scope) {
    return RegistrySchema.parse({
      ...common,
      collections: [
        { pattern: "users/{uid}", retentionClass: "user-delete" },
        { pattern: "notes/{noteId}", retentionClass: "user-delete" },
      ],
      subjects: { user: { scopeLookups: [] } },
      dataMap: {
        user: [
          { id: "profile", kind: "doc", path: "users/{uid}", action: "delete", recursive: true },
          { id: "notes", kind: "query", collection: "notes", where: [["ownerUid", "==", "{uid}"]], action: "delete" },
        ],
      },
    });
  }
  const record = `${scope.collection}/{${scope.key}}`;
  return RegistrySchema.parse({
    ...common,
    collections: [
      { pattern: record, retentionClass: "tenant-account" },
      { pattern: `${record}/docs/{docId}`, retentionClass: "user-delete" },
    ],
    subjects: { user: { scopeLookups: [{ via: "claim", claim: scope.key }] }, scope: { name: scope.name, key: scope.key, record } },
    dataMap: {
      user: [{ id: "docs", kind: "query", collection: `${record}/docs`, where: [["authorUid", "==", "{uid}"]], action: "delete" }],
      tenant: [{ id: "scope-tree", kind: "doc", path: record, action: "delete", recursive: true }],
    },
  });
}
