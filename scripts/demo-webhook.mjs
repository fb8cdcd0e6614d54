// A local webhook processor for the demo (`npm start`): it stands in for the vendor behind one of the example's
// webhook processors (AtlasMart's search index), checks each notice's signature with that processor's emulator key
// (functions/.secret.local), prints what it received, and answers with a receipt signed with the same key, which the
// control plane records as the processor's acknowledgement (docs/decisions/0039-processors.md).
//
// The harness starts it for an example whose example.json names a `demoWebhook` ({ processor, secret }), on
// 127.0.0.1:8790 + EMULATOR_PORT_OFFSET, and points the processor there (RETENTION_PROCESSOR_ENDPOINTS).
import { createHmac, timingSafeEqual } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";

const HEADER = "x-retention-signature";

/** The processor's key from functions/.secret.local (its first, during a rotation). */
export function localKey(root, secret) {
  const file = join(root, "functions", ".secret.local");
  const line = existsSync(file) ? readFileSync(file, "utf8").split("\n").find((l) => l.startsWith(`${secret}=`)) : undefined;
  if (!line) throw new Error(`no key ${secret} in functions/.secret.local: run \`node scripts/local-evidence-key.mjs\``);
  return line.slice(secret.length + 1).trim().split(",")[0];
}

const mac = (key, atMs, body) => createHmac("sha256", key).update(`${atMs}.${body}`).digest("hex");

/** Whether `header` signs `body` with `key` within five minutes (the control plane's own rule). */
export function signedBy(key, body, header) {
  const m = /^t=(\d{1,16}),v1=([0-9a-f]{64})$/.exec(header ?? "");
  if (!m || Math.abs(Date.now() - Number(m[1])) > 5 * 60_000) return false;
  return timingSafeEqual(Buffer.from(m[2], "hex"), Buffer.from(mac(key, Number(m[1]), body), "hex"));
}

/**
 * Starts the webhook; resolves with its URL and a stop function. `log` gets one line per notice. A notice whose
 * signature does not check is answered 401 and not acknowledged.
 */
export function startDemoWebhook({ root, processor, secret, port, log = (line) => process.stdout.write(`${line}\n`) }) {
  const key = localKey(root, secret);
  let receipts = 0;
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      if (req.method !== "POST" || !signedBy(key, body, req.headers[HEADER])) {
        log(`[demo-webhook] ${processor}: refused a request whose signature does not check`);
        res.writeHead(401).end();
        return;
      }
      const notice = JSON.parse(body);
      const receipt = JSON.stringify({ noticeId: notice.noticeId, idempotencyKey: notice.idempotencyKey, receiptId: `demo-${processor}-${++receipts}` });
      log(`[demo-webhook] ${processor} received the erasure of ${notice.subject.type} ${notice.subject.id} (entries ${notice.entries.join(", ")}; idempotency key ${notice.idempotencyKey}); signature valid; answered receipt demo-${processor}-${receipts}`);
      const atMs = Date.now();
      res.writeHead(200, { "content-type": "application/json", [HEADER]: `t=${atMs},v1=${mac(key, atMs, receipt)}` }).end(receipt);
    });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    // Port 0 takes a free one (the seed's suite): the URL names the port bound.
    server.listen(port, "127.0.0.1", () => resolve({ url: `http://127.0.0.1:${server.address().port}/erasures`, stop: () => new Promise((r) => server.close(() => r())) }));
  });
}
