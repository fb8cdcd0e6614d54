/** Helpers of the evidence suites. */
import { localAnchors } from "../../../functions/src/platform/anchors";

/**
 * Deletes the per-append head records from the emulators' anchors store, keeping the periodic anchors: what the
 * anchor store holds when every head record's write failed, so a test sees what the periodic anchor alone catches.
 */
export async function dropHeadRecords(databaseId = "(default)"): Promise<number> {
  const snap = await localAnchors(databaseId).where("event", "==", "retention.evidence.head").get();
  await Promise.all(snap.docs.map((d) => d.ref.delete()));
  return snap.size;
}
