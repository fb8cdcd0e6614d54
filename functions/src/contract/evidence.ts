import { z } from "zod";
import { inputs, isoString, StaffNames } from "./inputs";
import { SubjectInput } from "./subjects";

const verify = z.enum(["entries", "chain"]).optional();
/** `database`: only this governed database's evidence (logical name); default every one's, database by database. */
const paging = { pageSize: inputs.pageSize.optional(), cursor: inputs.cursor.optional(), verify, database: inputs.database.optional() };

/**
 * "Why was this deleted, and who allowed it?" for one document path (or Cloud Storage object, `gs://bucket/name`), one
 * deletion request or one subject.
 * `verify`: "entries" (default) checks each returned entry's hash and its links to its neighbours;
 * "chain" walks the whole ledger (every chain and the anchors) as `retention verify-evidence` does.
 */
export const ExplainDeletionInput = z.union([
  z.object({ path: inputs.evidencePath, ...paging }).strict(),
  z.object({ requestId: inputs.id, ...paging }).strict(),
  z.object({ subjectUid: inputs.id, ...paging }).strict(),
  /** The general form: a user (every request of theirs, in every scope) or a scope (its closures). */
  z.object({ subject: SubjectInput, ...paging }).strict(),
]);

export const EvidenceEntryView = z.object({
  /** The entry's document id in the ledger: its chain and its place in it. */
  id: z.string(),
  /** The chain (shard) the entry belongs to, and its sequence number in that chain. */
  chain: z.string(),
  seq: z.number(),
  at: isoString,
  action: z.string(),
  actor: z.object({ type: z.enum(["user", "staff", "system"]), id: z.string() }),
  reason: z.string(),
  policyVersion: z.string(),
  requestId: z.string().nullable(),
  holdId: z.string().nullable(),
  correlationId: z.string().nullable(),
  manifestHash: z.string().nullable(),
  counts: z.record(z.string(), z.number()),
  /** How many paths the entry names, and those of them this question is about. */
  pathCount: z.number(),
  paths: z.array(z.string()),
  detail: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])),
  hash: z.string(),
  /**
   * What the person who acted typed, where the evidence keeps only its hash: a hold release's reason, read from the
   * hold's record, and whether it still hashes to what the entry recorded. Null for other entries.
   */
  statement: z.object({ kind: z.literal("releaseReason"), text: z.string(), matchesEvidence: z.boolean() }).nullable(),
  /** Why this entry is shown: it names the path/request/subject, or it is context (the request, the run's approval). */
  role: z.enum(["match", "context"]),
  /** The entry's own hash, its MAC, and its links to the entries before and after it in its chain. */
  verified: z.boolean(),
  /** Under a registry with several governed databases: the database whose ledger holds the entry. */
  database: z.string().optional(),
});

export const ExplainDeletionOutput = z.object({
  query: z.object({ kind: z.enum(["path", "request", "subject", "scope"]), value: z.string() }),
  entries: z.array(EvidenceEntryView),
  nextCursor: z.string().nullable(),
  /** One sentence per entry: what was done, by whom, under which reason; then ("allowed by: ...") who allowed it. */
  summary: z.array(z.string()),
  /** The staff among the entries' actors, named. */
  people: StaffNames,
  verification: z.object({
    mode: z.enum(["entries", "chain"]),
    ok: z.boolean(),
    checked: z.number(),
    problems: z.array(z.object({ id: z.string().nullable(), chain: z.string(), seq: z.number(), problem: z.string(), detail: z.string() })),
  }),
});
