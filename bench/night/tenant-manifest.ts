/**
 * The 1,000,000-document tenant of the scale plan, as a manifest (no database): its own tree (the tenant, 999
 * users, 96,000 orders with 9 messages each), its external copies (directory listings and feed items) and the
 * invoices its closure masks, in discovery's order (depth first: a document, then everything under it). Shared by
 * the fan-out simulation test (the cutter's ordering rules at this size) and the night simulation (its time).
 */
export const TENANT = {
  orders: 96_000,
  messagesPerOrder: 9,
  users: 999,
  directory: 15_000,
  feedItems: 14_000,
  masks: 10_000,
} as const;

export interface TenantManifest {
  delete: string[];
  external: string[];
  mask: { path: string; fields: string[] }[];
}

const pad = (n: number) => String(n).padStart(6, "0");

export function tenantManifest(): TenantManifest {
  const own: string[] = ["tenants/t-big"];
  for (let u = 0; u < TENANT.users; u++) own.push(`tenants/t-big/users/u-${pad(u)}`);
  for (let o = 0; o < TENANT.orders; o++) {
    const order = `tenants/t-big/orders/o-${pad(o)}`;
    own.push(order);
    for (let m = 0; m < TENANT.messagesPerOrder; m++) own.push(`${order}/messages/m-${m}`);
  }
  const external: string[] = [];
  for (let d = 0; d < TENANT.directory; d++) external.push(`directoryListings/t-big-${pad(d)}`);
  for (let f = 0; f < TENANT.feedItems; f++) external.push(`feeds/f-${pad(f % 50)}/items/t-big-${pad(f)}`);
  const mask = Array.from({ length: TENANT.masks }, (_, i) => ({ path: `invoices/t-big-${pad(i)}`, fields: ["email", "customerName"] }));
  return { delete: [...own, ...external], external, mask };
}

/** What the tenant's closure deletes per retention class (the brake's input). */
export const tenantDeleteByClass = (): Record<string, number> => ({
  orders: TENANT.orders,
  messages: TENANT.orders * TENANT.messagesPerOrder,
  users: TENANT.users,
  tenants: 1,
  directory: TENANT.directory,
  feeds: TENANT.feedItems,
});
