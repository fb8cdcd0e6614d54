import type { PubSub } from "@google-cloud/pubsub";
import { processorUrlAllowed, type Processor } from "../kernel/policy-schema";
import { secretValues } from "./evidence-key";
import { settings, setting } from "./settings";
import { pubSub } from "./lazy-libraries";

/**
 * The processors' adapters: their HMAC keys, where a webhook is reached, and the two ways a notice leaves the
 * control plane (an HTTPS POST, a Pub/Sub publish). The rules of what is sent are in processors/rules.ts.
 */

/** The header a signature travels in, on a notice, on a webhook's answer and on a callback. */
export const SIGNATURE_HEADER = "x-retention-signature";

/**
 * Which processors a deployment points elsewhere: `RETENTION_PROCESSOR_ENDPOINTS`, `name=url` pairs separated by
 * commas (the emulators' local webhook instead of the vendor's). Each url passes the registry's own check; a
 * malformed entry fails loudly, so a notice never goes to a half-read address.
 */
export function parseEndpointOverrides(raw: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of raw.split(",").map((s) => s.trim()).filter((s) => s !== "")) {
    const i = part.indexOf("=");
    const name = i > 0 ? part.slice(0, i).trim() : "";
    const url = i > 0 ? part.slice(i + 1).trim() : "";
    if (!/^[a-z0-9]+(-[a-z0-9]+)*$/.test(name) || !processorUrlAllowed(url)) {
      throw new Error(`RETENTION_PROCESSOR_ENDPOINTS: ${JSON.stringify(part)} is not name=url (a processor's name, and an https url or http on the loopback)`);
    }
    out.set(name, url);
  }
  return out;
}

/** A processor's keys (the first signs, all verify), or an error that names the secret to create. */
export function processorKeys(p: Processor): string[] {
  if (p.secret === undefined) throw new Error(`PROCESSOR_KEY_MISSING: processor ${p.name} (kind ${p.kind}) has no secret`);
  const keys = secretValues(p.secret);
  if (!keys) {
    throw new Error(
      `PROCESSOR_KEY_MISSING: no key for processor ${p.name}: create the secret ${p.secret} (\`openssl rand -hex 32 | gcloud secrets create ${p.secret} --data-file=-\`), or on the emulators run \`node scripts/local-evidence-key.mjs\``,
    );
  }
  return keys;
}

/** Where a webhook processor's notices go here: RETENTION_PROCESSOR_ENDPOINTS' url for it, else the registry's. */
export function webhookUrl(p: Processor): string {
  const override = parseEndpointOverrides(setting("processorEndpoints")).get(p.name);
  const url = override ?? p.url;
  if (url === undefined) throw new Error(`processor ${p.name} is not a webhook`);
  // Plain http is for the loopback on the emulators only: a deployed function never sends a notice in clear.
  if (url.startsWith("http:") && !settings.onEmulator()) throw new Error(`PROCESSOR_INSECURE_URL: ${p.name}'s url is http, which only the emulators may use`);
  return url;
}

/** What a webhook answered: its status, its body and the signature it sent with it. */
export interface WebhookAnswer {
  status: number;
  body: string;
  signature: string | undefined;
}

/**
 * POSTs a signed notice to a webhook and reads its answer, within RETENTION_PROCESSOR_TIMEOUT_SECONDS; a timeout
 * or a network failure throws (the delivery counts it as a failed attempt).
 */
export async function postWebhook(url: string, body: string, headers: { signature: string; idempotencyKey: string }): Promise<WebhookAnswer> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", [SIGNATURE_HEADER]: headers.signature, "idempotency-key": headers.idempotencyKey },
    body,
    redirect: "error",
    signal: AbortSignal.timeout(setting("processorTimeoutSeconds") * 1000),
  });
  // A bounded read: an answer is a small receipt, never a page.
  const text = (await res.text()).slice(0, 16_384);
  return { status: res.status, body: text, signature: res.headers.get(SIGNATURE_HEADER) ?? undefined };
}

let pubsub: PubSub | undefined;

/**
 * Publishes a signed notice to a processor's topic in the functions' project (PUBSUB_EMULATOR_HOST, when set,
 * is the emulator's). Returns the message id Pub/Sub gave it.
 */
export async function publishNotice(topic: string, body: string, headers: { signature: string; idempotencyKey: string }): Promise<string> {
  // The library is loaded at the first notice, not at import (platform/lazy-libraries.ts); every notice shares one client.
  pubsub ??= new (pubSub().PubSub)({ projectId: settings.projectId() });
  return pubsub.topic(topic).publishMessage({ data: Buffer.from(body, "utf8"), attributes: { signature: headers.signature, idempotencyKey: headers.idempotencyKey } });
}
