import { z } from "zod";
import { patternMatchesSegments, segments } from "./paths";
import { PROCESSOR_KINDS } from "./processor-states";

/**
 * The zod schema of a policy registry version (`policies/versions/*.json`). The registry is data: an
 * organisation's decisions written down so that code can enforce them and people can review them.
 */

const kebab = z.string().regex(/^[a-z0-9]+(-[a-z0-9]+)*$/, "kebab-case id");
const SCREAMING = z.string().regex(/^[A-Z][A-Z0-9_]*$/, "SCREAMING_SNAKE code");
/** A collection path pattern such as `workspaces/{workspaceId}/docs/{docId}`: collection/{docVar} pairs. */
const docPattern = z
  .string()
  .regex(/^[A-Za-z][A-Za-z0-9_-]*\/\{[A-Za-z]+\}(\/[A-Za-z][A-Za-z0-9_-]*\/\{[A-Za-z]+\})*$/, "collection/{id} pairs");

export const RetentionClassSchema = z
  .object({
    id: kebab,
    description: z.string().min(1),
    /** Days from the anchor (the document's `createdAt`, or the parent's expiry for inherited classes). null: no fixed end. */
    durationDays: z.number().int().positive().nullable(),
    expiryIsBusinessFact: z.boolean(),
    mechanism: z.enum(["ttl", "workflow", "archive-workflow"]),
    holdBehaviour: z.enum(["allow", "deny"]),
    archive: z.object({ required: z.boolean(), target: z.enum(["firestore"]).optional() }).strict(),
    recovery: z.string().min(1),
    /** Days a deletion request waits before the purge may act (the user can still cancel). */
    graceDays: z.number().int().nonnegative().optional(),
    /** Days by which a deletion request must be completed (GDPR Art. 12(3): one month). */
    dueDays: z.number().int().positive().optional(),
    /** The nested-data rule: children carry their parent's `expireAt`. */
    inheritsParentExpiry: z.boolean().default(false),
    /** Erasable through a subject's deletion workflow (a user's or a tenant's request) before its retention ends. */
    userDeletable: z.boolean(),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (c.mechanism === "ttl" && c.durationDays === null && !c.inheritsParentExpiry) {
      ctx.addIssue({ code: "custom", message: `${c.id}: a ttl class needs durationDays or inheritsParentExpiry` });
    }
    if (c.mechanism === "archive-workflow" && !c.archive.required) {
      ctx.addIssue({ code: "custom", message: `${c.id}: archive-workflow requires archive.required=true` });
    }
  });

/**
 * A governed database's logical name (kebab-case), as `databases[]` declares it and `database` fields name it: the
 * same in every project, mapped to a physical database id by the RETENTION_DATABASES setting. `primary` is
 * reserved: it names the primary database (RETENTION_DATABASE_ID), where a field without `database` points.
 */
export const PRIMARY_DATABASE = "primary";
const databaseName = kebab.refine((id) => id !== PRIMARY_DATABASE, `"${PRIMARY_DATABASE}" names the primary database: leave database out instead`);

/** An additional governed database: its logical name and what it holds, for the people who review the registry. */
export const DatabaseSchema = z.object({ id: databaseName, description: z.string().min(1) }).strict();

export const CollectionRuleSchema = z
  .object({
    /** Document path pattern, e.g. `logins/{loginId}/keys/{keyId}`. */
    pattern: docPattern,
    /** The governed database the collection lives in (a `databases[]` id); absent: the primary. */
    database: databaseName.optional(),
    retentionClass: kebab,
    /** Field the class's retention is anchored to (defaults to createdAt). */
    anchorField: z.string().default("createdAt"),
    /** For inherited classes: the parent document pattern whose expireAt the child copies. */
    parentPattern: docPattern.optional(),
    description: z.string().optional(),
  })
  .strict();

/**
 * A data-map filter: `[field, "==", value]` or `[field, "array-contains", value]`, the value a literal or a
 * subject variable (`{uid}`, or the scope's key such as `{tenantId}`).
 */
const whereClause = z.tuple([z.string().min(1), z.enum(["==", "array-contains"]), z.string().min(1)]);
const fieldName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "a top-level field name");
const variableName = z.string().regex(/^[A-Za-z][A-Za-z0-9]*$/, "a template variable name");
/** A document path template: collection/id pairs, each id a literal or a `{variable}` (`members/{uid}`, `workspaces/{workspaceId}`). */
const docTemplate = z
  .string()
  .regex(/^[A-Za-z][A-Za-z0-9_-]*\/(\{[A-Za-z]+\}|[A-Za-z0-9_.-]+)(\/[A-Za-z][A-Za-z0-9_-]*\/(\{[A-Za-z]+\}|[A-Za-z0-9_.-]+))*$/, "a document path template: collection/{id} pairs");
const collectionPath = z.string().regex(/^[A-Za-z][A-Za-z0-9_-]*(\/(\{[A-Za-z]+\}|[A-Za-z0-9_-]+)\/[A-Za-z][A-Za-z0-9_-]*)*$/, "a collection path");

/** A Cloud Storage bucket: a name (which may use `{projectId}`), or `(default)`, the project's default bucket. */
const bucketName = z
  .string()
  .regex(/^(\(default\)|[a-z0-9{][A-Za-z0-9._{}-]{2,221})$/, "a bucket name (lower case, digits, dots, dashes, underscores), optionally with {projectId}, or (default)");
/** An object name template: no leading slash, no empty segment, not starting with a variable. */
const objectTemplate = z.string().regex(/^[^{/][^\s]*$/, "an object name template that starts with a literal, e.g. members/{uid}/");

/** The actions a storage entry takes: an object is deleted or kept (no fields to mask, no array to leave, no archive). */
const STORAGE_ACTIONS = new Set(["delete", "retain"]);

export const DataMapEntrySchema = z
  .object({
    id: kebab,
    /**
     * doc: one document by path. query: a collection filtered by foreign key.
     * collectionGroup: every collection with this id, filtered by foreign key.
     * storage: Cloud Storage objects in a bucket, by prefix (`members/{uid}/`) or one object's name (docs/STORAGE.md).
     */
    kind: z.enum(["doc", "query", "collectionGroup", "storage"]),
    /**
     * The governed database the entry reaches into (a `databases[]` id); absent: the primary. Not for kind storage:
     * a bucket belongs to no database, and its objects go with the database of their heldWith document.
     */
    database: databaseName.optional(),
    /** What the entry reaches and why, for the people who review the data map (never shown to the subject). */
    description: z.string().min(1).optional(),
    path: z.string().optional(),
    collection: z.string().optional(),
    collectionId: z.string().optional(),
    where: z.array(whereClause).default([]),
    /** storage: the bucket, `(default)` for the project's default bucket (RETENTION_STORAGE_BUCKET), or a name with `{projectId}`. */
    bucket: bucketName.optional(),
    /** storage: every object whose name starts with this template, which ends with `/` (`members/{uid}/`). */
    prefix: objectTemplate.optional(),
    /** storage: one object's name template (`avatars/{uid}.jpg`). */
    object: objectTemplate.optional(),
    /**
     * storage: the Firestore document the objects are held with (`members/{uid}`): a hold whose record covers it (the
     * document itself or an ancestor) holds these objects.
     */
    heldWith: docTemplate.optional(),
    /**
     * What erasure does to the document: delete it; retain it with a reason; mask named fields; or archive it
     * (a verified archive copy keeps the record for the rest of its retention, then the original is deleted).
     */
    action: z.enum(["delete", "retain", "mask", "archive", "removeFromArray"]),
    /** Descendant subcollections go with the document. */
    recursive: z.boolean().default(false),
    /** A copy outside the subject's own tree (directories, feeds): listed for review. */
    external: z.boolean().default(false),
    maskFields: z.array(z.string().min(1)).optional(),
    /**
     * For `removeFromArray`: the array field the subject's uid is taken out of (a member leaving a chat). The
     * document stays, without the subject in it.
     */
    arrayField: fieldName.optional(),
    /** Why data is retained, masked or archived instead of deleted; shown to the user. */
    reason: z.string().optional(),
    reasonCode: SCREAMING.optional(),
  })
  .strict()
  .superRefine((e, ctx) => {
    const issue = (message: string) => ctx.addIssue({ code: "custom", message: `${e.id}: ${message}` });
    if (e.kind === "storage") {
      refineStorageEntry(e, issue);
    } else {
      const need = { doc: "path", query: "collection", collectionGroup: "collectionId" } as const;
      if (!e[need[e.kind]]) issue(`kind ${e.kind} needs ${need[e.kind]}`);
      for (const f of ["bucket", "prefix", "object", "heldWith"] as const) if (e[f] !== undefined) issue(`${f} is only for kind storage`);
    }
    if (e.action === "mask" && (!e.maskFields || e.maskFields.length === 0)) {
      issue("mask needs maskFields");
    }
    if (e.action === "removeFromArray" && !e.arrayField) issue("removeFromArray needs arrayField");
    if (e.action !== "removeFromArray" && e.arrayField) issue("arrayField is only for removeFromArray");
    if (e.action === "removeFromArray" && e.recursive) issue("removeFromArray keeps the document, so it cannot be recursive");
    if (e.action !== "delete" && (!e.reason || !e.reasonCode)) {
      issue(`${e.action} needs reason and reasonCode`);
    }
  });

/**
 * A storage entry's own rules: a bucket, exactly one of `prefix` and `object`, a `heldWith` document, the actions
 * an object can take, no document-only field, and templates that cannot reach another subject's objects.
 */
function refineStorageEntry(e: { bucket?: string; prefix?: string; object?: string; heldWith?: string; path?: string; collection?: string; collectionId?: string; where: unknown[]; action: string; recursive: boolean; external: boolean; maskFields?: unknown; arrayField?: unknown }, issue: (message: string) => void): void {
  if (!e.bucket) issue("kind storage needs bucket (a name, or (default))");
  for (const v of templateVariables(e.bucket ?? "")) if (v !== "projectId") issue(`bucket may use {projectId} only, not {${v}}`);
  if ((e.prefix === undefined) === (e.object === undefined)) issue("kind storage needs exactly one of prefix (a folder, ending in /) and object (one object's name)");
  if (!e.heldWith) issue("kind storage needs heldWith: the document a hold must cover to hold these objects (e.g. members/{uid})");
  for (const f of ["path", "collection", "collectionId"] as const) if (e[f] !== undefined) issue(`${f} is for documents, not kind storage`);
  if (e.where.length > 0) issue("where is for documents, not kind storage");
  if (!STORAGE_ACTIONS.has(e.action)) {
    issue(`kind storage takes delete or retain, not ${e.action}: an object has no fields to mask or array to leave, and objects have no archive`);
  }
  if (e.recursive) issue("recursive is for documents: a storage prefix already reaches every object under it");
  if (e.external) issue("external is for documents, not kind storage");
  const template = e.prefix ?? e.object ?? "";
  if (e.prefix !== undefined) {
    if (!e.prefix.endsWith("/")) issue(`prefix ${e.prefix} must end with / (a prefix matches names, not folders: members/{uid} would also reach members/{uid}0...)`);
    for (const m of e.prefix.matchAll(/\{([A-Za-z]+)\}/g)) {
      if (e.prefix[m.index + m[0].length] !== "/") issue(`prefix ${e.prefix}: {${m[1]}} must be followed by / (otherwise one subject's prefix also reaches another's whose id starts with theirs)`);
    }
  }
  if (template.includes("//")) issue(`${template} has an empty segment`);
  const vars = new Set(templateVariables(template));
  if (vars.size === 0) issue(`${template} names no subject variable: every subject would reach the same objects`);
  for (const v of templateVariables(e.heldWith ?? "")) {
    if (!vars.has(v)) issue(`heldWith ${e.heldWith}: {${v}} must also be in the object template, so an object's heldWith document can be read from its name`);
  }
}

/**
 * The governed databases (logical names) with a collection rule matching a storage entry's heldWith document: the
 * database whose holds can cover the objects (a hold targets a document of its own database, never a gs:// object).
 * The schema allows at most one; none means the primary (docs/decisions/0036-several-databases.md).
 */
export function storageEntryCells(heldWith: string, collections: readonly { pattern: string; database?: string | undefined }[]): string[] {
  const held = segments(heldWith);
  const cells = collections.filter((c) => patternMatchesSegments(c.pattern, held)).map((c) => c.database ?? PRIMARY_DATABASE);
  return [...new Set(cells)];
}

/**
 * The registry's processors against the rest of it: unique names and secrets, each received entry an entry of that
 * subject's data map, in the primary database (a processor's notice is written with its request's end, which the
 * primary's part of a request decides), and a scope-kind entry only where the app has a scope kind.
 */
function refineProcessors(r: { processors: readonly Processor[]; controlPlane: readonly { collection: string }[]; dataMap: { user: readonly DataMapEntry[]; tenant?: readonly DataMapEntry[] | undefined } }, issue: (message: string) => void): void {
  if (r.processors.length > 0 && !r.controlPlane.some((c) => c.collection === PROCESSOR_NOTICES)) {
    issue(`processors: the registry's controlPlane must list ${PROCESSOR_NOTICES}, the processors' outbox, with its retention class`);
  }
  const names = new Set<string>();
  const secrets = new Map<string, string>();
  for (const p of r.processors) {
    if (names.has(p.name)) issue(`duplicate processor ${p.name}`);
    names.add(p.name);
    if (p.secret !== undefined) {
      const other = secrets.get(p.secret);
      if (other !== undefined) issue(`processors.${p.name}: secret ${p.secret} is also ${other}'s; each processor signs with its own key`);
      secrets.set(p.secret, p.name);
    }
    for (const kind of ["user", "tenant"] as const) {
      const entries = r.dataMap[kind];
      for (const id of p.receives[kind]) {
        const entry = entries?.find((e) => e.id === id);
        if (!entries) issue(`processors.${p.name}: receives.${kind} names ${id}, but the registry has no dataMap.${kind}`);
        else if (!entry) issue(`processors.${p.name}: receives.${kind} names ${id}, which dataMap.${kind} does not have (it has ${entries.map((e) => e.id).join(", ")})`);
        else if (entry.database !== undefined) issue(`processors.${p.name}: receives.${kind}.${id} is in database ${entry.database}; a processor receives entries of the primary database only`);
      }
      if (new Set(p.receives[kind]).size !== p.receives[kind].length) issue(`processors.${p.name}: receives.${kind} names an entry twice`);
    }
  }
}

/** The `{name}` variables of a template, in order. */
export const templateVariables = (template: string): string[] => [...template.matchAll(/\{([A-Za-z]+)\}/g)].map((m) => m[1]!);

export const HoldReasonSchema = z
  .object({
    code: SCREAMING,
    description: z.string().min(1),
    /** The person releasing must differ from the person who placed the hold. */
    twoPersonRelease: z.boolean(),
    /** May be released before its releaseAfter date. */
    earlyReleaseAllowed: z.boolean(),
  })
  .strict();

export const ControlPlaneCollectionSchema = z
  .object({ collection: z.string().min(1), retentionClass: kebab, description: z.string().min(1) })
  .strict();

/**
 * How the engine finds the scope (tenant, workspace, organisation) a user's data lives in, tried in order:
 * - `claim`: a custom claim on the user's Auth account;
 * - `document`: a field of a document keyed by the uid (a user directory that outlives the account);
 * - `membership`: the `scopeField` of the documents of a collection whose `userField` is the uid;
 * - `array`: the ids of the documents of a collection whose array `field` contains the uid;
 * - `path`: membership documents whose path carries the scope (`workspaces/{workspaceId}/members/{memberId}`),
 *   found by a collection-group query on `userField` (the field that holds the uid), the scope's id read from
 *   the path. The pattern's parent collection has the scope's key as its only variable, so a scope's members
 *   are one collection (its closure lists them there).
 * The first lookup that finds any scope decides, with every scope it finds (a user in several scopes is erased
 * in each by one request group). After them, the subject's latest deletion request (which outlives all of these).
 */
export const ScopeLookupSchema = z.discriminatedUnion("via", [
  z.object({ via: z.literal("claim"), claim: fieldName }).strict(),
  z.object({ via: z.literal("document"), path: docPattern, field: fieldName }).strict(),
  z.object({ via: z.literal("membership"), collection: collectionPath, userField: fieldName, scopeField: fieldName }).strict(),
  z.object({ via: z.literal("array"), collection: collectionPath, field: fieldName }).strict(),
  z.object({ via: z.literal("path"), pattern: docPattern, userField: fieldName }).strict(),
]);

/**
 * Who the data belongs to. A user is a Firebase Auth account, its key `{uid}`. An app may also have a scope
 * kind, the owner users belong to (a tenant, a workspace, an organisation): its name, the template variable of
 * its key, and its own record. A hold on a scope's record holds the whole scope; a scope has its own deletion
 * (closure, approved by a second person) with its own data map. A single-tenant app declares no scope: its users
 * belong to none, and its data map uses `{uid}` alone.
 */
export const SubjectsSchema = z
  .object({
    user: z
      .object({
        description: z.string().min(1).optional(),
        /** Where a user's scope is found; empty when the app has no scope kind. */
        scopeLookups: z.array(ScopeLookupSchema).default([]),
        /** The class whose grace and due periods govern a user's erasure (default: the product's `user-delete`). */
        requestClass: kebab.optional(),
        /**
         * Uids the app writes into records that belong to no person: a system author, a moderation bot, a support
         * queue (`system`, `bot-moderator`). They have no Auth account, and the audit does not report their records
         * as an erased subject's (ORPHANED_SUBJECT). Nothing else treats them apart: a request to erase one is
         * handled as any user's. At most 100, each a uid's 1 to 128 characters.
         */
        systemUids: z
          .array(z.string().min(1).max(128))
          .max(100)
          .refine((uids) => new Set(uids).size === uids.length, "subjects.user.systemUids lists a uid twice")
          .optional(),
      })
      .strict(),
    scope: z
      .object({
        /** What people call it in the console and the CLI: `tenant`, `workspace`. */
        name: kebab,
        /** The template variable of its key (`tenantId`), the field that carries it, and the claim apps set. */
        key: variableName,
        /** Its own record, which a hold holds as a subtree: `workspaces/{workspaceId}`. */
        record: docPattern,
        /** The class whose grace and due periods govern the scope's closure (default: the product's `tenant-account`). */
        requestClass: kebab.optional(),
        description: z.string().min(1).optional(),
      })
      .strict()
      .optional(),
  })
  .strict()
  .superRefine((s, ctx) => {
    if (!s.scope && s.user.scopeLookups.length > 0) ctx.addIssue({ code: "custom", message: "subjects.user.scopeLookups needs subjects.scope" });
    if (s.scope && !s.scope.record.endsWith(`/{${s.scope.key}}`)) {
      ctx.addIssue({ code: "custom", message: `subjects.scope.record must end with its key {${s.scope.key}}` });
    }
    if (s.scope?.key === "uid") ctx.addIssue({ code: "custom", message: "subjects.scope.key cannot be uid, the user's key" });
    for (const lookup of s.user.scopeLookups) {
      if (lookup.via !== "path" || !s.scope) continue;
      const vars = [...lookup.pattern.matchAll(/\{([A-Za-z]+)\}/g)].map((m) => m[1]!);
      const parentVars = vars.slice(0, -1);
      if (parentVars.length !== 1 || parentVars[0] !== s.scope.key) {
        ctx.addIssue({ code: "custom", message: `subjects.user.scopeLookups: a path lookup's collection must carry the scope's key {${s.scope.key}} and no other variable (${lookup.pattern})` });
      }
    }
  });

/**
 * A period of a legal clock: calendar months (GDPR's "one month", which ends on the same day of the month after, or
 * on the month's last day when it has none) or days (CCPA's 45).
 */
export const LegalPeriodSchema = z.union([
  z.object({ months: z.number().int().positive().max(24) }).strict(),
  z.object({ days: z.number().int().positive().max(730) }).strict(),
]);

/** A law a subject's request runs under: its deadline from the moment the request is opened, and the one extension it allows. */
export const LegalClockLawSchema = z
  .object({
    id: kebab,
    /** What people call it in the console, the CLI and the evidence: `GDPR Art. 12(3)`. */
    name: z.string().min(1),
    period: LegalPeriodSchema,
    /** How much longer staff may make the deadline, once, with a written reason; absent: not extendable. */
    extension: LegalPeriodSchema.optional(),
  })
  .strict();

/**
 * Which law applies to a user's request, tried in order; the first that matches decides:
 * - `scope`: the user's request in one of these scopes (a tenant in California);
 * - `field`: a field of a document keyed by the uid (`profiles/{uid}` field `region`) holding one of `values`.
 */
export const LegalClockRuleSchema = z.discriminatedUnion("via", [
  z.object({ law: kebab, via: z.literal("scope"), scopes: z.array(z.string().min(1)).min(1) }).strict(),
  z.object({ law: kebab, via: z.literal("field"), path: docTemplate, field: fieldName, values: z.array(z.string().min(1)).min(1) }).strict(),
]);

/**
 * The legal clocks of a subject's requests (docs/decisions/0040-legal-clocks-and-access.md): the laws, which applies
 * to whom (`rules`, else `default`). Absent: a request is due by its class's `dueDays`, with no extension.
 */
export const LegalClocksSchema = z
  .object({
    laws: z.array(LegalClockLawSchema).min(1),
    rules: z.array(LegalClockRuleSchema).default([]),
    default: kebab,
  })
  .strict()
  .superRefine((c, ctx) => {
    const ids = new Set<string>();
    for (const l of c.laws) {
      if (ids.has(l.id)) ctx.addIssue({ code: "custom", message: `legalClocks: duplicate law ${l.id}` });
      ids.add(l.id);
    }
    if (!ids.has(c.default)) ctx.addIssue({ code: "custom", message: `legalClocks.default names unknown law ${c.default}` });
    for (const r of c.rules) {
      if (!ids.has(r.law)) ctx.addIssue({ code: "custom", message: `legalClocks.rules: unknown law ${r.law}` });
      if (r.via === "field") {
        const vars = templateVariables(r.path);
        if (vars.length !== 1 || vars[0] !== "uid") ctx.addIssue({ code: "custom", message: `legalClocks.rules: a field rule's path is keyed by {uid} alone (${r.path})` });
      }
    }
  });

/**
 * A processor: a service the app feeds personal data to (a search index, an email tool, a payment provider) that
 * must erase its copy when a subject is erased (docs/decisions/0039-processors.md):
 * - `webhook`: an HTTPS endpoint the control plane POSTs a signed deletion notice to;
 * - `pubsub`: a Pub/Sub topic it publishes the signed notice to;
 * - `manual`: a vendor with no API; staff carry the deletion out and confirm it in the console.
 * It names the data-map entries whose data it receives (by subject kind), the days it has agreed to erase within,
 * and how it acknowledges: `response` (the webhook's 2xx answer carries a signed receipt), `callback` (it later
 * POSTs a signed receipt to the ackProcessorNotice endpoint) or `staff` (a person confirms it).
 */
export const ProcessorSchema = z
  .object({
    name: kebab,
    description: z.string().min(1),
    kind: z.enum(PROCESSOR_KINDS),
    /** webhook: where the notice is POSTed: https, or http on the loopback (127.0.0.1, localhost) for local runs. */
    url: z.string().optional(),
    /** pubsub: the topic id in the functions' project (`erasures-search`). */
    topic: z.string().regex(/^[A-Za-z][A-Za-z0-9._~%+-]{2,254}$/, "a Pub/Sub topic id (3 to 255 characters, starting with a letter)").optional(),
    /** manual: what staff do to have the vendor erase the subject (shown in the console). */
    instructions: z.string().min(1).optional(),
    /** The data-map entries whose data it receives, by subject kind: a user's erasure notifies it when `user` names any. */
    receives: z.object({ user: z.array(kebab).default([]), tenant: z.array(kebab).default([]) }).strict(),
    /** Days after the erasure reaches it by which it has agreed to confirm the deletion. */
    deadlineDays: z.number().int().min(1).max(365),
    acknowledges: z.enum(["response", "callback", "staff"]),
    /** webhook and pubsub: the Secret Manager secret holding its HMAC key (`RETENTION_PROCESSOR_SEARCH_KEY`), one per processor. */
    secret: z.string().regex(/^RETENTION_PROCESSOR_[A-Z0-9_]+$/, "a secret name starting with RETENTION_PROCESSOR_ (SCREAMING_SNAKE)").optional(),
  })
  .strict()
  .superRefine((p, ctx) => {
    const issue = (message: string) => ctx.addIssue({ code: "custom", message: `processors.${p.name}: ${message}` });
    const allowed = { webhook: ["url", "secret"], pubsub: ["topic", "secret"], manual: ["instructions"] } as const;
    for (const f of ["url", "topic", "instructions", "secret"] as const) {
      const mine = (allowed[p.kind] as readonly string[]).includes(f);
      if (mine && p[f] === undefined) issue(`kind ${p.kind} needs ${f}`);
      if (!mine && p[f] !== undefined) issue(`${f} is not for kind ${p.kind}`);
    }
    const acks = { webhook: ["response", "callback"], pubsub: ["callback"], manual: ["staff"] } as const;
    if (!(acks[p.kind] as readonly string[]).includes(p.acknowledges)) {
      issue(`a ${p.kind} processor acknowledges by ${acks[p.kind].join(" or ")}, not ${p.acknowledges}`);
    }
    if (p.url !== undefined && !processorUrlAllowed(p.url)) issue(`url ${p.url} must be https:// (http:// only on 127.0.0.1 or localhost)`);
    if (p.receives.user.length + p.receives.tenant.length === 0) issue("receives names no data-map entry: a processor that receives nothing is never notified");
  });

/** The processors' outbox collection, which a registry with processors lists in its controlPlane. */
export const PROCESSOR_NOTICES = "processorNotices";

/** A webhook's URL: https anywhere; plain http only on the loopback, for the emulators and tests. */
export function processorUrlAllowed(url: string): boolean {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  if (u.username !== "" || u.password !== "") return false;
  return u.protocol === "https:" || (u.protocol === "http:" && (u.hostname === "127.0.0.1" || u.hostname === "localhost"));
}

export const RegistrySchema = z
  .object({
    version: z.string().regex(/^v[0-9]+$/),
    effectiveFrom: z.iso.datetime(),
    description: z.string().min(1),
    /**
     * Governed databases besides the primary one (RETENTION_DATABASE_ID), by logical name. Each is a cell of its
     * own: its collections and its part of the data map name it (`database`), and the engine runs there with its own
     * holds, fence, evidence and requests (docs/decisions/0036-several-databases.md).
     */
    databases: z.array(DatabaseSchema).default([]),
    classes: z.array(RetentionClassSchema).min(1),
    collections: z.array(CollectionRuleSchema).min(1),
    controlPlane: z.array(ControlPlaneCollectionSchema),
    holdReasons: z.array(HoldReasonSchema).min(1),
    /** Who the data belongs to (required from the first version that has it: the engine enforces it on the current one). */
    subjects: SubjectsSchema.optional(),
    /**
     * Document patterns a hold holds as a subtree (the document and everything under it, later documents
     * included), besides the scope's record: a chat with its messages.
     */
    subtreeHoldRoots: z.array(docPattern).default([]),
    /** What erasure does, per subject: `user`, and `tenant` (the scope's closure) when the app has a scope kind. */
    dataMap: z.object({ user: z.array(DataMapEntrySchema).min(1), tenant: z.array(DataMapEntrySchema).min(1).optional() }).strict(),
    purge: z
      .object({
        /** Mass-deletion brake: refuse a run deleting more than this many documents... */
        brakeMaxDocuments: z.number().int().positive(),
        /** ...or more than this share of any one class's documents. */
        brakeMaxShareOfClass: z.number().positive().max(1),
        /** Share checks only apply when a class has at least this many documents. */
        brakeMinClassSize: z.number().int().positive(),
      })
      .strict(),
    /** How long idempotency markers live: must exceed the longest redelivery window. */
    processedEventTtlDays: z.number().int().positive(),
    /** The legal deadline each subject's request runs on (GDPR, CCPA), by scope or field, with a default. */
    legalClocks: LegalClocksSchema.optional(),
    /** The processors an erasure must reach beyond the app's own databases (docs/decisions/0039-processors.md). */
    processors: z.array(ProcessorSchema).default([]),
  })
  .strict()
  .superRefine((r, ctx) => {
    const declared = new Set<string>();
    for (const d of r.databases) {
      if (declared.has(d.id)) ctx.addIssue({ code: "custom", message: `duplicate database ${d.id}` });
      declared.add(d.id);
    }
    const undeclared = (where: string, database: string | undefined) => {
      if (database !== undefined && !declared.has(database)) ctx.addIssue({ code: "custom", message: `${where} names database ${database}, which databases[] does not declare` });
    };
    for (const col of r.collections) undeclared(col.pattern, col.database);
    for (const [kind, entries] of Object.entries(r.dataMap)) {
      for (const e of entries ?? []) {
        undeclared(`dataMap.${kind}.${e.id}`, e.database);
        if (e.kind !== "storage" || e.heldWith === undefined) continue;
        if (e.database !== undefined) {
          ctx.addIssue({ code: "custom", message: `dataMap.${kind}.${e.id}: a bucket belongs to no database; a storage entry's objects go with the database of their heldWith document (${e.heldWith}), so leave database out` });
        }
        const cells = storageEntryCells(e.heldWith, r.collections);
        if (cells.length > 1) {
          ctx.addIssue({ code: "custom", message: `dataMap.${kind}.${e.id}: heldWith ${e.heldWith} matches a collection in several databases (${cells.join(", ")}); the objects must go with one database's holds` });
        }
      }
    }
    const ids = new Set<string>();
    for (const c of r.classes) {
      if (ids.has(c.id)) ctx.addIssue({ code: "custom", message: `duplicate class ${c.id}` });
      ids.add(c.id);
    }
    for (const col of [...r.collections, ...r.controlPlane]) {
      if (!ids.has(col.retentionClass)) {
        const name = "pattern" in col ? col.pattern : col.collection;
        ctx.addIssue({ code: "custom", message: `${name} names unknown class ${col.retentionClass}` });
      }
    }
    for (const col of r.collections) {
      const cls = r.classes.find((c) => c.id === col.retentionClass);
      if (cls?.inheritsParentExpiry && !col.parentPattern) {
        ctx.addIssue({ code: "custom", message: `${col.pattern}: inherited class needs parentPattern` });
      }
    }
    // A scope rule matches a user's request by the scope it is opened in: an app without a scope kind has none.
    if (r.legalClocks?.rules.some((rule) => rule.via === "scope") && !r.subjects?.scope) {
      ctx.addIssue({ code: "custom", message: "legalClocks.rules: a scope rule needs a scope kind (subjects.scope); match users by a field rule instead" });
    }
    if (r.subjects) {
      const scope = r.subjects.scope;
      if (scope && !r.dataMap.tenant) ctx.addIssue({ code: "custom", message: `dataMap.tenant: a scope kind (${scope.name}) needs its closure's data map` });
      if (!scope && r.dataMap.tenant) ctx.addIssue({ code: "custom", message: "dataMap.tenant needs subjects.scope" });
      for (const [who, id] of [["user", r.subjects.user.requestClass], ["scope", scope?.requestClass]] as const) {
        const cls = id === undefined ? undefined : r.classes.find((c) => c.id === id);
        if (id !== undefined && cls?.dueDays === undefined) ctx.addIssue({ code: "custom", message: `subjects.${who}.requestClass ${id} must name a class with dueDays` });
      }
      const allowed = new Set(["uid", ...(scope ? [scope.key] : [])]);
      for (const [kind, entries] of Object.entries(r.dataMap)) {
        const own = kind === "tenant" ? new Set(scope ? [scope.key] : []) : allowed;
        for (const e of entries ?? []) {
          // A scope's storage entry may name each user's objects under the scope's prefix: there {uid} is read from
          // each object's name (`workspaces/{workspaceId}/members/{uid}/`), after the scope's key, which bounds the listing.
          const wildcard = kind === "tenant" && e.kind === "storage" ? new Set(["uid"]) : new Set<string>();
          for (const text of [e.path, e.collection, ...e.where.map((w) => w[2]), e.prefix, e.object, e.heldWith]) {
            for (const m of (text ?? "").matchAll(/\{([A-Za-z]+)\}/g)) {
              if (!own.has(m[1]!) && !wildcard.has(m[1]!)) {
                ctx.addIssue({ code: "custom", message: `dataMap.${kind}.${e.id}: {${m[1]}} is not a variable of this subject` });
              }
            }
          }
          const first = templateVariables(e.prefix ?? e.object ?? "")[0];
          if (e.kind === "storage" && first !== undefined && !own.has(first)) {
            ctx.addIssue({ code: "custom", message: `dataMap.${kind}.${e.id}: the template's first variable must be the subject's own ({${first}} is not), so listing its objects stays within the subject` });
          }
        }
      }
    }
    for (const e of r.dataMap.tenant ?? []) {
      if (e.action === "removeFromArray") ctx.addIssue({ code: "custom", message: `dataMap.tenant.${e.id}: removeFromArray takes a user out of an array, so it belongs in dataMap.user` });
    }
    if (!r.subjects && !r.dataMap.tenant) ctx.addIssue({ code: "custom", message: "dataMap.tenant is required in a version without subjects" });
    refineProcessors(r, (message) => ctx.addIssue({ code: "custom", message }));
    const codes = new Set<string>();
    for (const h of r.holdReasons) {
      if (codes.has(h.code)) ctx.addIssue({ code: "custom", message: `duplicate hold reason ${h.code}` });
      codes.add(h.code);
    }
  });

export type Registry = z.infer<typeof RegistrySchema>;
export type RetentionClass = z.infer<typeof RetentionClassSchema>;
export type CollectionRule = z.infer<typeof CollectionRuleSchema>;
export type DataMapEntry = z.infer<typeof DataMapEntrySchema>;
/** A data-map entry of kind `storage`, with the fields the schema requires of it. */
export type StorageEntry = DataMapEntry & { kind: "storage"; bucket: string; heldWith: string; action: "delete" | "retain" };
export type HoldReason = z.infer<typeof HoldReasonSchema>;
export type Subjects = z.infer<typeof SubjectsSchema>;
export type GovernedDatabase = z.infer<typeof DatabaseSchema>;
export type ScopeLookup = z.infer<typeof ScopeLookupSchema>;
export type LegalClocks = z.infer<typeof LegalClocksSchema>;
export type LegalClockLaw = z.infer<typeof LegalClockLawSchema>;
export type LegalPeriod = z.infer<typeof LegalPeriodSchema>;
export type Processor = z.infer<typeof ProcessorSchema>;
