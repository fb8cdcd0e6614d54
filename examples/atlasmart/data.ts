/**
 * The AtlasMart demo: fixed ids (docs/OVERVIEW.md) that scenarios, tests and `npm start` rely on.
 * Business fields only; retention fields are applied by the governed write helper when seeding.
 * `ageDays` places a document's retention anchor in the past, relative to the first seed.
 */
export interface DemoDoc {
  path: string;
  tenantId: string;
  data: Record<string, unknown>;
  ageDays?: number;
  /** Business timestamp fields set to the document's anchor time (e.g. a message's sentAt). */
  timestampFields?: string[];
}

export const DEMO_TENANT = "t-acme";

export const DEMO_DOCS: readonly DemoDoc[] = [
  { path: "tenants/t-acme", tenantId: "t-acme", data: { name: "Acme Outfitters" } },
  { path: "tenants/t-acme/users/u-1001", tenantId: "t-acme", data: { uid: "u-1001", displayName: "Ada Lovelace" } },
  { path: "tenants/t-acme/users/u-1002", tenantId: "t-acme", data: { uid: "u-1002", displayName: "Ben Okafor" } },
  {
    path: "tenants/t-acme/orders/o-1001",
    tenantId: "t-acme",
    data: { customerId: "u-1001", customerName: "Ada Lovelace", shippingAddress: "1 Analytical Way", status: "DELIVERED", totalMinor: 4599 },
    ageDays: 20,
  },
  {
    path: "tenants/t-acme/orders/o-1002",
    tenantId: "t-acme",
    data: { customerId: "u-1001", customerName: "Ada Lovelace", shippingAddress: "1 Analytical Way", status: "PAID", totalMinor: 12999 },
    ageDays: 5,
  },
  {
    path: "tenants/t-acme/orders/o-1001/messages/m-001",
    tenantId: "t-acme",
    data: { authorId: "u-1001", text: "Where is my parcel?" },
    timestampFields: ["sentAt"],
    ageDays: 19,
  },
  {
    path: "tenants/t-acme/orders/o-1001/messages/m-002",
    tenantId: "t-acme",
    data: { authorId: "support-1", text: "It ships tomorrow." },
    timestampFields: ["sentAt"],
    ageDays: 18,
  },
  { path: "userDirectory/u-1001", tenantId: "t-acme", data: { uid: "u-1001" } },
  { path: "userDirectory/u-1002", tenantId: "t-acme", data: { uid: "u-1002" } },
  { path: "activity/a-001", tenantId: "t-acme", data: { subjectUid: "u-1001", type: "ORDER_PLACED" }, ageDays: 5 },
  { path: "activity/a-002", tenantId: "t-acme", data: { subjectUid: "u-1002", type: "SIGNED_IN" }, ageDays: 1 },
  { path: "sessions/s-1001", tenantId: "t-acme", data: { uid: "u-1001" }, ageDays: 1 },
  { path: "sessions/s-1001/tokens/tk-1001", tenantId: "t-acme", data: { kind: "refresh" }, ageDays: 1 },
  { path: "sessions/s-1002", tenantId: "t-acme", data: { uid: "u-1002" }, ageDays: 2 },
  { path: "sessions/s-1002/tokens/tk-1002", tenantId: "t-acme", data: { kind: "refresh" }, ageDays: 2 },
  { path: "events/e-001", tenantId: "t-acme", data: { type: "PAGE_VIEW" }, ageDays: 3 },
  { path: "events/e-002", tenantId: "t-acme", data: { type: "CHECKOUT_STARTED" }, ageDays: 10 },
  { path: "auditRecords/ar-001", tenantId: "t-acme", data: { action: "REFUND_ISSUED", actorUid: "u-1001" }, ageDays: 12 },
];

export interface DemoUser {
  uid: string;
  email: string;
  displayName: string;
  claims: { tenantId?: string; roles?: string[] };
}

/** Auth-emulator users, one per role, so every role can be tried from `npm start`. */
export const DEMO_USERS: readonly DemoUser[] = [
  { uid: "u-1001", email: "ada@atlasmart.test", displayName: "Ada Lovelace", claims: { tenantId: "t-acme" } },
  { uid: "u-1002", email: "ben@atlasmart.test", displayName: "Ben Okafor", claims: { tenantId: "t-acme" } },
  { uid: "c-2001", email: "clara.compliance@atlasmart.test", displayName: "Clara (compliance)", claims: { roles: ["compliance"] } },
  { uid: "c-2002", email: "dev.compliance@atlasmart.test", displayName: "Dev (compliance)", claims: { roles: ["compliance"] } },
  { uid: "r-3001", email: "rita.admin@atlasmart.test", displayName: "Rita (retention-admin)", claims: { roles: ["retention-admin"] } },
];

export const DEMO_PASSWORD = "atlasmart-demo";

/**
 * The demo's Cloud Storage objects, in the default bucket (the registry's `tenant-files`, `uploads` and
 * `customer-uploads` entries): t-acme's own files, and each customer's uploads under their folder.
 */
export const DEMO_OBJECTS: readonly { name: string; contentType: string; body: string }[] = [
  { name: "tenants/t-acme/files/logo.png", contentType: "image/png", body: "acme outfitters logo" },
  { name: "tenants/t-acme/files/catalogue/spring-2026.pdf", contentType: "application/pdf", body: "spring catalogue" },
  { name: "tenants/t-acme/users/u-1001/receipts/o-1001.pdf", contentType: "application/pdf", body: "receipt for o-1001" },
  { name: "tenants/t-acme/users/u-1001/returns/photo-1.jpg", contentType: "image/jpeg", body: "a photo of a returned boot" },
  { name: "tenants/t-acme/users/u-1002/receipts/o-1002.pdf", contentType: "application/pdf", body: "receipt for o-1002" },
];

/** Collections the demo schema uses (for the "every collection is classified" check). */
export function demoCollectionIds(): Set<string> {
  const ids = new Set<string>();
  for (const d of DEMO_DOCS) d.path.split("/").forEach((seg, i) => i % 2 === 0 && ids.add(seg));
  return ids;
}
