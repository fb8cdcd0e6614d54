import type { DocumentData } from "firebase-admin/firestore";
import type { CloudFunction } from "firebase-functions/v2";
import { onDocumentDeleted, type FirestoreEvent } from "firebase-functions/v2/firestore";
import { FUNCTION_SECRETS, PARAMS } from "../../config/params";
import { fillTemplate } from "../../kernel/paths";
import { ttlTriggerTargets, versionString, type TtlTriggerTarget } from "../../ttl/rules";
import { emitMetric } from "../../platform/metrics";
import { policy } from "../../platform/registry";
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
export async function handleTtlDeleted(target: TtlTriggerTarget, event: TtlDeleteEvent, opts: TtlDeleteOptions = {}): Promise<TtlDeleteResult> {
  const path = event.data?.ref?.path ?? fillTemplate(target.pattern, event.params);
  const parsedTime = event.time ? Date.parse(event.time) : NaN;
  const trigger = `${TTL_TRIGGER_GROUP}-${target.name}`;
  try {
    return await processTtlDelete(
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
    );
  } catch (err) {
    // The event will be redelivered (retry is on); the failure still counts.
    emitMetric("retention.trigger_failures", 1, { trigger });
    throw err;
  }
}

type DeleteTrigger = CloudFunction<FirestoreEvent<unknown>>;

/**
 * One delete trigger per TTL-managed collection in the bundled registry: adding a TTL collection to the
 * registry adds its trigger, with no code change. Retries are on, because a failed effect must run again;
 * the event-id marker makes the retries (and Eventarc's own duplicates) harmless. A failure throws.
 */
export function ttlDeletedTriggers(): Record<string, DeleteTrigger> {
  const triggers: Record<string, DeleteTrigger> = {};
  for (const target of ttlTriggerTargets(policy())) {
    triggers[target.name] = onDocumentDeleted({ document: target.pattern, database: PARAMS.databaseId, retry: true, secrets: FUNCTION_SECRETS }, async (event) => {
      await handleTtlDeleted(target, event);
    }) as DeleteTrigger;
  }
  return triggers;
}

/** The generated triggers, exported as one group (see index.ts): `ttlDeleted-sessions`, `ttlDeleted-events`, ... */
export const ttlDeleted = ttlDeletedTriggers();
