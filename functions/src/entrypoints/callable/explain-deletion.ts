import type { z } from "zod";
import { ExplainDeletionInput } from "../../contract/evidence";
import { explainEvidence, type ExplainQuery } from "../../evidence/index";
import { callable, requireRole, type Caller } from "./shared";

export { ExplainDeletionInput };

/**
 * "Why was this deleted, and who allowed it?": compliance reads the evidence about a path, a request or a
 * subject, with the entries that authorised it and whether they verify. About a path, an entry's other paths
 * (a purge batch names other subjects' documents too) are not shown.
 */
export async function explainDeletionHandler(input: z.infer<typeof ExplainDeletionInput>, caller: Caller) {
  requireRole(caller, "compliance");
  const query: ExplainQuery =
    "path" in input ? { kind: "path", value: input.path } : "requestId" in input ? { kind: "request", value: input.requestId } : { kind: "subject", value: input.subjectUid };
  return explainEvidence(query, { pageSize: input.pageSize, cursor: input.cursor, verify: input.verify });
}

/** A whole-chain verification walks every entry: it gets the scheduled jobs' timeout, not a callable's 60 s. */
export const explainDeletion = callable("explainDeletion", ExplainDeletionInput, explainDeletionHandler, { timeoutSeconds: 540, memory: "512MiB" });
