import type { DocumentData } from "firebase-admin/firestore";
import type { CloudFunction } from "firebase-functions/v2";
import { onDocumentDeleted, type FirestoreEvent } from "firebase-functions/v2/firestore";
import { FUNCTION_SECRETS, PARAMS } from "../../config/params";
import { fillTemplate } from "../../kernel/paths";
import { ttlTriggerTargets, versionString, type TtlTriggerTarget } from "../../ttl/rules";
import { emitMetric } from "../../platform/metrics";
import { registryPolicy } from "../../platform/registry";
import { settings } from "../../platform/settings";
import { inCell } from "../../platform/firestore";
import { PRIMARY_CELL } from "../../kernel/policy";
import { processTtlDelete, type TtlDeleteOptions, type TtlDeleteResult } from "../../ttl/index";

/** Exported group name: functions deploy as `ttlDeleted-<collection>` (e.g. `ttlDeleted-sessions`). */
export const TTL_TRIGGER_GROUP = "ttlDeleted";

/** What the handler needs from a delete event; a real FirestoreEvent and a test's synthetic event both fit. */
export interface TtlDeleteEvent {
  id: string;
  /** RFC 3339 event time; the time the sweeper (or anyone) deleted the document. */
  time?: string;
  /** The deleted document's last snapshot: its data, path and version (update time). */
  data?: { data(): DocumentData | undefined; ref?: { path: string }; updateTime?: { seconds: number; nanoseconds: number } } | undefined;
  params: Record<string, string>;
}

/**
 * The body of every TTL delete trigger: resolve the deleted path, then carry out the effect once per
 * event id. Exported so tests can deliver the same event many times, or inject a fault.
 */
export async function handleTtlDeleted(target: TtlTriggerTarget & { cell?: string }, event: TtlDeleteEvent, opts: TtlDeleteOptions = {}): Promise<TtlDeleteResult> {
  const path = event.data?.ref?.path ?? fillTemplate(target.pattern, event.params);
  const parsedTime = event.time ? Date.parse(event.time) : NaN;
  const trigger = `${TTL_TRIGGER_GROUP}-${target.name}`;
  try {
    // In the trigger's cell: the marker, the fence, the holds and the evidence are that database's.
    return await inCell(target.cell ?? PRIMARY_CELL, () =>
      processTtlDelete(
      {
        eventId: event.id,
        eventTimeMs: Number.isFinite(parsedTime) ? parsedTime : Date.now(),
        path,
        data: event.data?.data(),
        version: event.data?.updateTime ? versionString(event.data.updateTime) : null,
        trigger,
        childCollections: target.childCollections,
      },
      opts,
      ),
    );
  } catch (err) {
    // The event will be redelivered (retry is on); the failure still counts.
    emitMetric("retention.trigger_failures", 1, { trigger });
    throw err;
  }
}

type DeleteTrigger = CloudFunction<FirestoreEvent<unknown>>;

/**
 * The delete triggers of every governed database: one per (database, TTL-managed collection) of the registry in
 * force, named by the collection in the primary (`logins`) and by the database and the collection in another
 * (`audit__logins`). Each carries its cell, so its handler runs there (docs/decisions/0036-several-databases.md).
 */
export function ttlTriggerTargetsByCell(): (TtlTriggerTarget & { cell: string })[] {
  const whole = registryPolicy();
  return whole.cells().flatMap((cell) =>
    ttlTriggerTargets(whole.forCell(cell)).map((t) => ({ ...t, cell, ...(cell === PRIMARY_CELL ? {} : { name: `${cell.replace(/-/g, "_")}__${t.name}` }) })),
  );
}

/**
 * One delete trigger per TTL-managed collection of each governed database in the registry in force: adding a TTL
 * collection to the registry adds its trigger, with no code change. Retries are on, because a failed effect must run
 * again; the event-id marker makes the retries (and Eventarc's own duplicates) harmless. A failure throws.
 * The primary's triggers watch RETENTION_DATABASE_ID (a param); another database's, the id RETENTION_DATABASES maps
 * it to, read here while the functions load: firebase-tools loads them with the functions' dotenv files in the
 * environment, so the mapping belongs in `functions/.env` or `.env.<project>` (a deployed function gets the same).
 */
export function ttlDeletedTriggers(): Record<string, DeleteTrigger> {
  const triggers: Record<string, DeleteTrigger> = {};
  for (const target of ttlTriggerTargetsByCell()) {
    const database = target.cell === PRIMARY_CELL ? PARAMS.databaseId : settings.cellDatabaseId(target.cell);
    triggers[target.name] = onDocumentDeleted({ document: target.pattern, database, retry: true, secrets: FUNCTION_SECRETS }, async (event) => {
      await handleTtlDeleted(target, event);
    }) as DeleteTrigger;
  }
  return triggers;
}

/** The generated triggers, exported as one group (see index.ts): `ttlDeleted-sessions`, `ttlDeleted-events`, ... */
export const ttlDeleted = ttlDeletedTriggers();
