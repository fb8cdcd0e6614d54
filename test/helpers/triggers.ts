/**
 * Quiets the delete triggers before a suite resets a database on emulators that run the functions.
 *
 * The Firestore emulator's reset fires a delete event for every document it removes, so a reset with documents of
 * a TTL collection left in it sends the TTL triggers in after the reset: they write markers and evidence into the
 * next test's data while it seeds, and a trigger transaction that read a chain head before the reset and commits
 * after it leaves an entry whose predecessor the reset removed (the chain looks forked: BROKEN_LINK, HEAD_MISMATCH).
 * Production has no reset, and its commits are atomic, so this is a harness fault only. It is avoided here by
 * never resetting while a trigger has work: the writes of triggers still running from the last test are waited
 * out, the TTL collections are emptied by ordinary deletes, each of those triggers is waited for by the marker it
 * writes for that path, and only then does the reset run, with nothing left in it for a trigger to react to.
 */
import { registryPolicy } from "../../functions/src/platform/registry";
import { settings } from "../../functions/src/platform/settings";
import { COLLECTIONS } from "../../functions/src/platform/firestore";
import { patternMatchesSegments, segments } from "../../functions/src/kernel/paths";
import { ttlTriggerTargets } from "../../functions/src/ttl/rules";
import { db, waitFor } from "./emulator";

/** A trigger may need a new Functions-emulator worker, whose load can take up to 120 s (FUNCTIONS_DISCOVERY_TIMEOUT) on a busy 2-core machine. */
const TRIGGER_WAIT_MS = 150_000;
/** Two reads of the trigger-written collections this far apart that agree: no trigger wrote in between. */
const QUIET_MS = 600;

/** True when the emulators run the functions, whose delete triggers react to what a test deletes. */
export const functionsAreRunning = (): boolean => Boolean(process.env.FUNCTIONS_EMULATOR_ORIGIN);

/** The delete triggers' collection patterns that watch the physical database `databaseId`. */
function watchedPatterns(databaseId: string): string[] {
  // The whole registry, whichever database the caller works in: a trigger per cell, as the functions deploy them.
  const whole = registryPolicy();
  return whole
    .cells()
    .filter((cell) => settings.cellDatabaseId(cell) === databaseId)
    .flatMap((cell) => ttlTriggerTargets(whole.forCell(cell)).map((t) => t.pattern));
}

/** Waits until the triggers' own writes (markers and evidence) stop changing in `databaseId`. */
async function quiet(databaseId: string): Promise<void> {
  const firestore = db(databaseId);
  const size = async () => {
    const [markers, evidence] = await Promise.all([
      firestore.collection(COLLECTIONS.processedEvents).count().get(),
      firestore.collection(COLLECTIONS.deletionAudits).count().get(),
    ]);
    return `${markers.data().count}/${evidence.data().count}`;
  };
  let last = await size();
  await waitFor(
    async () => {
      await new Promise((r) => setTimeout(r, QUIET_MS));
      const now = await size();
      const still = now === last;
      last = now;
      return still;
    },
    `trigger writes in ${databaseId} to stop`,
    TRIGGER_WAIT_MS,
  );
}

/** DONE markers the triggers wrote for `path` (a marker names the deleted path). */
async function doneMarkers(databaseId: string, path: string): Promise<number> {
  const snap = await db(databaseId).collection(COLLECTIONS.processedEvents).where("path", "==", path).get();
  return snap.docs.filter((d) => d.get("state") === "DONE").length;
}

/**
 * Empties the TTL collections of `databaseId` with ordinary deletes and waits for each delete's trigger, so that a
 * reset after it fires none. A no-op without the Functions emulator. Every delete of a document still here ends
 * with a DONE marker for its path, PURGE_ELIGIBLE or not: only a delete a committed purge batch explains writes
 * none, and a document still present is one no batch deleted.
 */
export async function settleDeleteTriggers(databaseId: string): Promise<void> {
  if (!functionsAreRunning()) return;
  await quiet(databaseId);
  const firestore = db(databaseId);
  const deleted: { path: string; before: number }[] = [];
  for (const pattern of watchedPatterns(databaseId)) {
    const parts = segments(pattern);
    const docs =
      parts.length === 2
        ? (await firestore.collection(parts[0]!).get()).docs
        : (await firestore.collectionGroup(parts[parts.length - 2]!).get()).docs.filter((d) => patternMatchesSegments(pattern, segments(d.ref.path)));
    for (const doc of docs) {
      deleted.push({ path: doc.ref.path, before: await doneMarkers(databaseId, doc.ref.path) });
      await firestore.recursiveDelete(doc.ref);
    }
  }
  for (const { path, before } of deleted) {
    await waitFor(async () => (await doneMarkers(databaseId, path)) > before, `the delete trigger of ${path}`, TRIGGER_WAIT_MS);
  }
  if (deleted.length > 0) await quiet(databaseId);
}
