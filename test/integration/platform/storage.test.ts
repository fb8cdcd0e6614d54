/**
 * The Cloud Storage adapter against the real Storage emulator (firebase-tools' own server, started by the harness).
 * Besides the adapter, two tests pin down what the emulator does with holds and preconditions, which
 * docs/STORAGE.md relies on: if a firebase-tools upgrade changes either, they fail and the page needs a new look.
 */
import { createHash } from "node:crypto";
import { beforeEach, describe, expect, it } from "vitest";
import {
  HOLD_MARKER_PREFIX,
  TEMPORARY_HOLD_OWNER_KEY,
  clearHoldMarker,
  deleteObjectIfUnchanged,
  isObjectHeld,
  listObjects,
  placeHoldMarker,
  readObject,
  type StorageObject,
} from "../../../functions/src/platform/storage";
import { clearBuckets, overwriteObject, putObject, storageFile, workerBucket } from "../../helpers/storage";

// Buckets of this worker's own (two vitest workers share the Storage emulator).
const BUCKET = workerBucket("demo-retention-uploads");
const OTHER_BUCKET = workerBucket("demo-retention-exports");

async function listAll(bucket: string, prefix: string, pageSize?: number): Promise<{ pages: StorageObject[][]; names: string[] }> {
  const pages: StorageObject[][] = [];
  for await (const page of listObjects(bucket, prefix, pageSize)) pages.push(page);
  return { pages, names: pages.flat().map((o) => o.name) };
}

const md5 = (body: string): string => createHash("md5").update(body).digest("base64");

describe("platform/storage on the Storage emulator", () => {
  beforeEach(async () => {
    await clearBuckets([BUCKET, OTHER_BUCKET]);
  });

  describe("listing", () => {
    it("pages through more objects than one page, in name order, each page at most the page size", async () => {
      const names = Array.from({ length: 23 }, (_, i) => `users/u1/photos/${String(i).padStart(3, "0")}.jpg`);
      for (const name of names) await putObject(BUCKET, name, `bytes of ${name}`);

      const { pages, names: listed } = await listAll(BUCKET, "users/u1/", 10);

      expect(pages.map((p) => p.length)).toEqual([10, 10, 3]);
      expect(listed).toEqual(names);
    });

    it("reports each object's bucket, name, generation (a string), size, MD5 and custom metadata, and no holds", async () => {
      const generation = await putObject(BUCKET, "users/u1/avatar.png", "twelve bytes", { origin: "upload" });

      const { pages } = await listAll(BUCKET, "users/u1/");

      expect(pages.flat()).toEqual([
        { bucket: BUCKET, name: "users/u1/avatar.png", generation, metageneration: "1", size: 12, md5Hash: md5("twelve bytes"), metadata: { origin: "upload" }, holdIds: [] },
      ]);
      expect(generation).toMatch(/^\d+$/);
      expect(isObjectHeld(pages[0]![0]!)).toBe(false);
    });

    it("a prefix with its trailing slash lists that folder only: not users/u10/, not the object named users/u1, not another bucket", async () => {
      for (const name of ["users/u1/a.txt", "users/u1/deep/b.txt", "users/u10/c.txt", "users/u1", "users/u2/d.txt"]) await putObject(BUCKET, name, name);
      await putObject(OTHER_BUCKET, "users/u1/e.txt", "e");

      expect((await listAll(BUCKET, "users/u1/")).names).toEqual(["users/u1/a.txt", "users/u1/deep/b.txt"]);
      expect((await listAll(OTHER_BUCKET, "users/u1/")).names).toEqual(["users/u1/e.txt"]);
      // Why the slash matters: a prefix matches names, so without it u1 takes in u10's objects.
      expect((await listAll(BUCKET, "users/u1")).names).toEqual(["users/u1", "users/u1/a.txt", "users/u1/deep/b.txt", "users/u10/c.txt"]);
    });

    it("an empty folder lists no page at all; an empty prefix and a page size outside 1..1000 are refused", async () => {
      await putObject(BUCKET, "users/u2/a.txt", "a");

      expect((await listAll(BUCKET, "users/u1/")).pages).toEqual([]);
      await expect(listAll(BUCKET, "")).rejects.toThrow(/needs a prefix/);
      await expect(listAll(BUCKET, "users/", 0)).rejects.toThrow(/pageSize/);
      await expect(listAll(BUCKET, "users/", 1001)).rejects.toThrow(/pageSize/);
    });
  });

  describe("reading one object", () => {
    it("gives the current generation, or null when no object has the name", async () => {
      const generation = await putObject(BUCKET, "users/u1/a.txt", "a");

      expect(await readObject(BUCKET, "users/u1/a.txt")).toMatchObject({ name: "users/u1/a.txt", generation, size: 1 });
      expect(await readObject(BUCKET, "users/u1/missing.txt")).toBeNull();
    });
  });

  describe("generation-checked delete", () => {
    it("deletes the generation it was given", async () => {
      const generation = await putObject(BUCKET, "users/u1/a.txt", "a");

      expect(await deleteObjectIfUnchanged({ bucket: BUCKET, name: "users/u1/a.txt", generation })).toEqual({ outcome: "deleted", generation });
      expect(await readObject(BUCKET, "users/u1/a.txt")).toBeNull();
    });

    it("says gone when the object is gone already", async () => {
      const generation = await putObject(BUCKET, "users/u1/a.txt", "a");
      await storageFile(BUCKET, "users/u1/a.txt").delete();

      expect(await deleteObjectIfUnchanged({ bucket: BUCKET, name: "users/u1/a.txt", generation })).toEqual({ outcome: "gone" });
    });

    it("says changed, and deletes nothing, when a new generation took the name since", async () => {
      const decidedOn = await putObject(BUCKET, "users/u1/a.txt", "old bytes");
      const newer = await overwriteObject(BUCKET, "users/u1/a.txt", decidedOn, "new bytes");

      const result = await deleteObjectIfUnchanged({ bucket: BUCKET, name: "users/u1/a.txt", generation: decidedOn });

      expect(result).toMatchObject({ outcome: "changed", current: { generation: newer, md5Hash: md5("new bytes") } });
      expect(await readObject(BUCKET, "users/u1/a.txt")).toMatchObject({ generation: newer });
    });

    it("says held, and deletes nothing, while a hold marker is on the object; deletes it once the marker is cleared", async () => {
      const generation = await putObject(BUCKET, "users/u1/a.txt", "a");
      const ref = { bucket: BUCKET, name: "users/u1/a.txt", generation };
      await placeHoldMarker(ref, "hold-1");

      expect(await deleteObjectIfUnchanged(ref)).toMatchObject({ outcome: "held", current: { generation, holdIds: ["hold-1"] } });
      expect(await readObject(BUCKET, "users/u1/a.txt")).not.toBeNull();

      await clearHoldMarker(ref, "hold-1");
      expect(await deleteObjectIfUnchanged(ref)).toEqual({ outcome: "deleted", generation });
    });
  });

  describe("hold markers", () => {
    it("a marker per hold: placing twice keeps one, clearing one keeps the other, the last one takes the engine's temporary-hold note with it", async () => {
      const generation = await putObject(BUCKET, "users/u1/a.txt", "a", { origin: "upload" });
      const ref = { bucket: BUCKET, name: "users/u1/a.txt", generation };

      const first = await placeHoldMarker(ref, "hold-1");
      expect(first).toMatchObject({ outcome: "marked", object: { generation, metageneration: "2", holdIds: ["hold-1"] } });
      expect(first.outcome === "marked" && first.object.metadata).toEqual({ origin: "upload", [HOLD_MARKER_PREFIX + "hold-1"]: "1", [TEMPORARY_HOLD_OWNER_KEY]: "1" });

      await placeHoldMarker(ref, "hold-1");
      await placeHoldMarker(ref, "hold-2");
      const both = await readObject(BUCKET, ref.name);
      expect(both).toMatchObject({ generation, holdIds: ["hold-1", "hold-2"] });
      expect(isObjectHeld(both!)).toBe(true);
      const { pages } = await listAll(BUCKET, "users/u1/");
      expect(pages.flat().map((o) => o.holdIds)).toEqual([["hold-1", "hold-2"]]);

      const one = await clearHoldMarker(ref, "hold-1");
      expect(one).toMatchObject({ outcome: "cleared", object: { holdIds: ["hold-2"] } });
      expect(one.outcome === "cleared" && one.object.metadata[TEMPORARY_HOLD_OWNER_KEY]).toBe("1");

      const none = await clearHoldMarker(ref, "hold-2");
      expect(none.outcome === "cleared" && none.object.metadata).toEqual({ origin: "upload" });
      expect(isObjectHeld((await readObject(BUCKET, ref.name))!)).toBe(false);
      // Clearing a marker that is not there is no error.
      expect(await clearHoldMarker(ref, "hold-2")).toMatchObject({ outcome: "cleared", object: { holdIds: [] } });
    });

    it("marks only the generation it was given: a newer generation is changed, a missing object is gone", async () => {
      const decidedOn = await putObject(BUCKET, "users/u1/a.txt", "old");
      const newer = await overwriteObject(BUCKET, "users/u1/a.txt", decidedOn, "new");

      expect(await placeHoldMarker({ bucket: BUCKET, name: "users/u1/a.txt", generation: decidedOn }, "hold-1")).toMatchObject({
        outcome: "changed",
        current: { generation: newer, holdIds: [] },
      });
      expect(await readObject(BUCKET, "users/u1/a.txt")).toMatchObject({ holdIds: [] });
      expect(await placeHoldMarker({ bucket: BUCKET, name: "users/u1/gone.txt", generation: decidedOn }, "hold-1")).toEqual({ outcome: "gone" });
      expect(await clearHoldMarker({ bucket: BUCKET, name: "users/u1/gone.txt", generation: decidedOn }, "hold-1")).toEqual({ outcome: "gone" });
    });

    it("refuses a hold id that cannot be a metadata key", async () => {
      const generation = await putObject(BUCKET, "users/u1/a.txt", "a");
      await expect(placeHoldMarker({ bucket: BUCKET, name: "users/u1/a.txt", generation }, "a/b")).rejects.toThrow(/hold id/);
      await expect(clearHoldMarker({ bucket: BUCKET, name: "users/u1/a.txt", generation }, "")).rejects.toThrow(/hold id/);
    });
  });

  describe("what the emulator does (docs/STORAGE.md)", () => {
    it("accepts temporaryHold and eventBasedHold, but neither stores nor enforces them: a held object can be deleted", async () => {
      await putObject(BUCKET, "users/u1/a.txt", "a");
      const file = storageFile(BUCKET, "users/u1/a.txt");

      const [patched] = await file.setMetadata({ temporaryHold: true, eventBasedHold: true });
      expect(patched.metageneration).toBe("2");
      expect(patched.temporaryHold).toBeUndefined();
      expect(patched.eventBasedHold).toBeUndefined();
      const [read] = await file.getMetadata();
      expect(read.temporaryHold).toBeUndefined();

      await file.delete();
      expect(await readObject(BUCKET, "users/u1/a.txt")).toBeNull();
    });

    it("ignores preconditions: a stale ifGenerationMatch deletes, and a marked object can be overwritten, its marker gone with the old generation", async () => {
      const generation = await putObject(BUCKET, "users/u1/a.txt", "a");
      await storageFile(BUCKET, "users/u1/a.txt").delete({ ifGenerationMatch: String(Number(generation) - 1) });
      expect(await readObject(BUCKET, "users/u1/a.txt")).toBeNull();

      const marked = await putObject(BUCKET, "users/u1/b.txt", "b");
      await placeHoldMarker({ bucket: BUCKET, name: "users/u1/b.txt", generation: marked }, "hold-1");
      const newer = await overwriteObject(BUCKET, "users/u1/b.txt", marked, "b2");
      expect(await readObject(BUCKET, "users/u1/b.txt")).toMatchObject({ generation: newer, holdIds: [] });
    });
  });
});
