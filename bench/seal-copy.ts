/**
 * What sealing an archive copy costs in CPU (decision 0038): AES-256-GCM seal and open of a typical order's business
 * data (about 0.5 KB of canonical JSON), per copy, on this machine. `npm run bench:seal`.
 */
import { canonicalJson } from "../functions/src/kernel/canonical";
import { newDataKey, open, seal, sealAad, type Sealed } from "../functions/src/shred/rules";

const key = newDataKey();
const order = {
  orderId: "o-123456",
  customerName: "Ada Lovelace",
  shippingAddress: "1 Analytical Way, London",
  items: Array.from({ length: 8 }, (_, i) => ({ sku: `sku-${i}`, qty: i, priceMinor: 1299 })),
  totalMinor: 12345,
  placedAt: { $timestamp: "1700000000.123456000" },
};
const text = canonicalJson(order);
const aad = sealAad("arc-0123456789", "tenants/t-acme/orders/o-123456", "dk-x#g1");
const N = 100_000;
const sealed: Sealed[] = [];
let t = process.hrtime.bigint();
for (let i = 0; i < N; i++) sealed.push(seal(key, text, aad));
const sealUs = Number(process.hrtime.bigint() - t) / N / 1000;
t = process.hrtime.bigint();
for (const s of sealed) open(key, s, aad);
const openUs = Number(process.hrtime.bigint() - t) / N / 1000;
process.stdout.write(`${JSON.stringify({ copies: N, plaintextBytes: text.length, sealedBytes: JSON.stringify(sealed[0]).length, sealUs: Number(sealUs.toFixed(1)), openUs: Number(openUs.toFixed(1)) })}\n`);
