import { onRequest } from "firebase-functions/v2/https";
import { FUNCTION_SECRETS, processorSecrets } from "../../config/params";
import { handleAckCallback } from "../../processors/index";
import { registryPolicy } from "../../platform/registry";
import { SIGNATURE_HEADER } from "../../platform/processors";

/**
 * Where a processor that acknowledges by callback POSTs its signed receipt (processors/ack.ts#handleAckCallback):
 * public, since the HMAC of the processor's own key is its authentication; a forged, stale or misdirected receipt is
 * refused (401) and changes nothing, and a second receipt for one notice is recorded once.
 */
export const ackProcessorNotice = onRequest(
  {
    invoker: "public",
    timeoutSeconds: 60,
    memory: "256MiB",
    secrets: [...FUNCTION_SECRETS, ...processorSecrets(registryPolicy().registry.processors.flatMap((p) => (p.secret ? [p.secret] : [])))],
  },
  async (req, res) => {
    if (req.method !== "POST") {
      res.status(405).json({ recorded: false, reason: "POST_ONLY" });
      return;
    }
    const raw = req.rawBody.toString("utf8");
    const answer = await handleAckCallback(raw, req.get(SIGNATURE_HEADER), Date.now());
    res.status(answer.status).json(answer.body);
  },
);
