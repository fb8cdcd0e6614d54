import { randomBytes } from "node:crypto";
import type { Writable } from "node:stream";
import type { Entry, Log, LogSync } from "@google-cloud/logging";
import type { CollectionReference } from "firebase-admin/firestore";
import { cloudLogging } from "./lazy-libraries";
import { db, governedDatabaseId } from "./firestore";
import { logResource } from "./log-resource";
import { settings } from "./settings";

/**
 * Where evidence anchors go: somewhere the governed database is not, so that someone who can write the
 * database cannot also rewrite what the anchors say (docs/decisions/0006-evidence-chain.md).
 * - In a deployed function: one structured log entry in the log `retention-evidence-anchors`, written to stdout
 *   with `logSync` (Cloud Functions ships stdout to Cloud Logging). An operator routes that log with a sink to a
 *   Cloud Storage bucket under a locked retention policy (docs/EVIDENCE-LEDGER.md).
 * - From the CLI on a project: the same entry through the Cloud Logging API.
 * - On the emulators: a document in the named database `evidence-anchors`
 *   (`ledgers/{databaseId}/anchors/{atMs}-{rand}`), where a local `verify-evidence` reads them. A function on the
 *   emulators writes its log line too.
 * The payload is the same everywhere: `{ event, anchor }`. Two events travel this way: the periodic anchor (every
 * head) and the per-append head record (one chain's head, right after the append committed); the log sink's
 * filter (evidence/rules.ts#ANCHOR_SINK_FILTER) selects both.
 */
export const ANCHOR_LOG_NAME = "retention-evidence-anchors";
export const ANCHOR_DATABASE = "evidence-anchors";

export interface AnchorPayload {
  event: string;
  anchor: { readonly atMs: number };
}

/** The emulators' anchors database holds one document per anchor or head record: `{atMs:015d}-{rand}`. */
const localId = (atMs: number): string => `${String(atMs).padStart(15, "0")}-${randomBytes(4).toString("hex")}`;

const onEmulator = (): boolean => Boolean(process.env.FIRESTORE_EMULATOR_HOST);
const inFunction = (): boolean => Boolean(process.env.K_SERVICE || process.env.FUNCTION_TARGET);

/** The emulators' anchors of one governed database. */
export function localAnchors(databaseId: string = governedDatabaseId()): CollectionReference {
  return db(ANCHOR_DATABASE).collection("ledgers").doc(databaseId).collection("anchors");
}

/**
 * Writes one anchor (or head record) to every sink that applies here; returns their names. `databaseId` is the
 * governed database whose ledger it anchors (on the emulators, where it is filed).
 */
export async function publishAnchor(payload: AnchorPayload, databaseId: string = governedDatabaseId()): Promise<string[]> {
  const sinks: string[] = [];
  const projectId = settings.projectId();
  if (onEmulator()) {
    await localAnchors(databaseId).doc(localId(payload.anchor.atMs)).create(payload);
    sinks.push(`firestore:${ANCHOR_DATABASE}`);
  }
  if (inFunction()) {
    writeAnchorLine(payload, process.stdout);
    sinks.push("stdout");
  } else if (!onEmulator()) {
    const log = new (cloudLogging().Logging)({ projectId }).log(ANCHOR_LOG_NAME);
    await log.write(anchorApiEntry(log, payload));
    sinks.push("cloud-logging");
  }
  return sinks;
}

/** The entry the CLI writes through the Logging API: the payload as its jsonPayload. */
export function anchorApiEntry(log: Log, payload: AnchorPayload): Entry {
  return log.entry({ severity: "NOTICE", resource: logResource(settings.projectId()), labels: { event: payload.event } }, payload);
}

/**
 * One writer per stream and project, made once: building a Logging client costs tens of milliseconds, and a
 * head record is written after every append.
 */
const lineWriters = new WeakMap<Writable, Map<string, LogSync>>();

/** One anchor as the structured log line `logSync` writes (the payload's fields at the top of jsonPayload). */
export function writeAnchorLine(payload: AnchorPayload, stream: Writable): void {
  const projectId = settings.projectId();
  let byProject = lineWriters.get(stream);
  if (!byProject) lineWriters.set(stream, (byProject = new Map<string, LogSync>()));
  let log = byProject.get(projectId);
  if (!log) byProject.set(projectId, (log = new (cloudLogging().Logging)({ projectId }).logSync(ANCHOR_LOG_NAME, stream, { useMessageField: false })));
  log.write(log.entry({ severity: "NOTICE", resource: logResource(projectId), labels: { event: payload.event } }, payload));
}

/** The emulators' anchors of one governed database, oldest first, as stored, with their document ids. */
export async function* localAnchorPayloads(databaseId: string = governedDatabaseId()): AsyncGenerator<{ id: string; data: unknown }> {
  const snap = await localAnchors(databaseId).get();
  for (const d of snap.docs) yield { id: d.id, data: d.data() };
}
