/**
 * A backup of an emulator database, as the restore drills take one: every document read as it is (walking down from
 * every collection, so documents under missing parents are included through `listDocuments`), and copied into
 * another database the way a restore of that backup would bring it back.
 */
import type { DocumentReference, Firestore } from "firebase-admin/firestore";

/** Every document of `store`, path to its data as JSON. */
export async function dumpDatabase(store: Firestore): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const walk = async (refs: DocumentReference[]): Promise<void> => {
    for (const ref of refs) {
      const snap = await ref.get();
      if (snap.exists) out.set(ref.path, JSON.stringify(snap.data()));
      for (const c of await ref.listCollections()) await walk(await c.listDocuments());
    }
  };
  for (const c of await store.listCollections()) await walk(await c.listDocuments());
  return out;
}

/** Copies every document of `from` into `to` as it is (a backup restored into another database); returns how many. */
export async function restoreInto(from: Firestore, to: Firestore): Promise<number> {
  const docs = await dumpDatabase(from);
  for (const path of docs.keys()) await to.doc(path).set((await from.doc(path).get()).data()!);
  return docs.size;
}
