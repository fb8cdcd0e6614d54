/**
 * The audit's Cloud Storage check (audit/objects.ts, docs/STORAGE.md) on the seeded AtlasMart demo with its objects:
 * one fault at a time, each reported with its own code, and the bound on the objects read.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { seedDemoObjects } from "../../../examples/atlasmart/seed";
import { placeHold, releaseHoldById } from "../../../functions/src/holds/index";
import { objectPath } from "../../../functions/src/kernel/storage-map";
import { defaultBucket, placeHoldMarker, readObject } from "../../../functions/src/platform/storage";
import { db } from "../../helpers/emulator";
import { clearStorage, putObject } from "../../helpers/storage";
import { audit, codeCounts, freshDemo, lines } from "./helpers";

const ADA = "tenants/t-acme/users/u-1001";
const RECEIPT = "tenants/t-acme/users/u-1001/receipts/o-1001.pdf";
const LOGO = "tenants/t-acme/files/logo.png";
const gs = (name: string) => objectPath(defaultBucket(), name);
const hold = async (target: string) => (await placeHold({ targetPath: target, reasonCode: "LITIGATION", releaseAfterMs: null, actor: { type: "staff", id: "c-2001" }, nowMs: Date.now() })).holdId;
const objectFindings = async () => lines((await audit()).findings.filter((f) => f.code.startsWith("OBJECT_")));

describe("the audit's object check", () => {
  beforeEach(async () => {
    await clearStorage();
    await freshDemo();
    await seedDemoObjects();
  });
  afterEach(() => {
    delete process.env.RETENTION_AUDIT_MAX_OBJECTS;
  });
  afterAll(clearStorage);

  it("reads every object of the data map's entries and finds nothing wrong on the seeded demo, nor under an applied hold", async () => {
    const clean = await audit();
    expect(codeCounts(clean)).toEqual({});
    expect(clean.stats.objects).toEqual({ checked: 5, truncated: false });
    await hold(ADA);
    // The hold's walk marked Ada's uploads: every covered object carries its marker.
    expect(await objectFindings()).toEqual([]);
  });

  it("OBJECT_HELD_UNMARKED: an object uploaded under an applied hold after its walk passed", async () => {
    const holdId = await hold(ADA);
    const later = "tenants/t-acme/users/u-1001/returns/photo-2.jpg";
    await putObject(defaultBucket(), later, "uploaded after the hold was applied");
    expect(await objectFindings()).toEqual([`OBJECT_HELD_UNMARKED ${gs(later)}`]);
    const f = (await audit()).findings.find((x) => x.code === "OBJECT_HELD_UNMARKED")!;
    expect(f.detail).toContain(holdId);
    // A hold on the tenant covers it too, once that hold's own walk has marked what it covers.
    const tenantHold = await hold("tenants/t-acme");
    expect((await readObject(defaultBucket(), later))?.holdIds).toEqual([tenantHold]);
    expect(await objectFindings()).toEqual([`OBJECT_HELD_UNMARKED ${gs(later)}`]);
  });

  it("OBJECT_MARKER_STALE: a marker of a released hold, or of no hold at all", async () => {
    const holdId = await hold(ADA);
    // A marker that outlived its hold (a flagging batch a release overtook, a hand edit).
    await placeHoldMarker({ bucket: defaultBucket(), name: LOGO, generation: (await readObject(defaultBucket(), LOGO))!.generation }, "h-gone");
    expect(await objectFindings()).toEqual([`OBJECT_MARKER_STALE ${gs(LOGO)}`]);
    // The release clears its own markers: only the one nobody answers for is left.
    await releaseHoldById({ holdId, reason: "done", actor: { type: "staff", id: "c-2002" }, nowMs: Date.now() });
    expect((await readObject(defaultBucket(), RECEIPT))?.holdIds).toEqual([]);
    expect(await objectFindings()).toEqual([`OBJECT_MARKER_STALE ${gs(LOGO)}`]);
    // A hold record that no longer exists (a database restored without it) leaves its markers stale too.
    const again = await hold(ADA);
    await db().doc(`retentionHolds/${again}`).delete();
    expect(await objectFindings()).toEqual(
      [`OBJECT_MARKER_STALE ${gs(LOGO)}`, `OBJECT_MARKER_STALE ${gs(RECEIPT)}`, `OBJECT_MARKER_STALE ${gs("tenants/t-acme/users/u-1001/returns/photo-1.jpg")}`].sort(),
    );
  });

  it("reads at most RETENTION_AUDIT_MAX_OBJECTS objects, and says when that cut the check short", async () => {
    process.env.RETENTION_AUDIT_MAX_OBJECTS = "2";
    const r = await audit();
    expect(r.stats.objects).toEqual({ checked: 2, truncated: true });
  });
});
