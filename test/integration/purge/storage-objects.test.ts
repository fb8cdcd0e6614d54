/**
 * Cloud Storage objects in an erasure (docs/STORAGE.md, docs/HOLD-FENCE.md "Cloud Storage objects"): AtlasMart's
 * registry names a customer's uploads (`tenants/{tenantId}/users/{uid}/`, held with their profile). The purge
 * deletes them in delete windows, with evidence naming each object with its generation; a hold on the profile keeps
 * them and marks them; and the races of the window protocol run for real: a hold placed while a window is open, a
 * hold placed before the decision, a runner that stalls past its window, a new upload between decision and delete.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { explainEvidence } from "../../../functions/src/evidence/index";
import { applyHoldNow, placeHold, releaseHoldById, resumeHoldApplications } from "../../../functions/src/holds/index";
import { DAY_MS } from "../../../functions/src/kernel/policy";
import { objectPath, parseObjectLabel } from "../../../functions/src/kernel/storage-map";
import { planSubject } from "../../../functions/src/plan/index";
import type { PurgeHookContext } from "../../../functions/src/purge/runner/env";
import { runNightlyPurge, type UnitReport } from "../../../functions/src/purge/job";
import { defaultBucket, readObject } from "../../../functions/src/platform/storage";
import { db } from "../../helpers/emulator";
import { clearStorage, overwriteObject, putObject } from "../../helpers/storage";
import {
  PURGE_TEST_DATABASE,
  AFTER_GRACE,
  committedBefore,
  expectChainVerifies,
  expectHoldsFenced,
  fenceGenerationOf,
  objectDeletions,
  putCustomer,
  requestDeletion,
  reset,
  runOptions,
  T0,
} from "./support";

const previous = { window: process.env.RETENTION_STORAGE_DELETE_WINDOW_SECONDS, timeout: process.env.RETENTION_STORAGE_DELETE_TIMEOUT_SECONDS };
beforeAll(() => {
  // A short window (the smallest the settings allow) keeps the stalled-runner test to seconds; 1 s delete timeout
  // and 1 s for the clocks: deletes start only while more than 2 s are left.
  process.env.RETENTION_STORAGE_DELETE_WINDOW_SECONDS = "5";
  process.env.RETENTION_STORAGE_DELETE_TIMEOUT_SECONDS = "1";
});
afterAll(async () => {
  // The bucket is shared by every suite of the run: leave nothing (a marker of a hold whose record a later suite
  // clears would be an audit finding there).
  await clearStorage();
  for (const [k, v] of [
    ["RETENTION_STORAGE_DELETE_WINDOW_SECONDS", previous.window],
    ["RETENTION_STORAGE_DELETE_TIMEOUT_SECONDS", previous.timeout],
  ] as const) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

const UID = "u-51";
const OTHER = "u-52";
const PROFILE = `tenants/t-acme/users/${UID}`;
const names = (uid: string) => [`tenants/t-acme/users/${uid}/receipts/r-1.pdf`, `tenants/t-acme/users/${uid}/returns/photo-1.jpg`, `tenants/t-acme/users/${uid}/returns/photo-2.jpg`];

let bucket: string;
/** Each object of the customer, with its generation, and its heldWith document (its profile). */
let objects: Map<string, string>;
let generations: Map<string, string>;
let requestId: string;

async function seed(): Promise<void> {
  await reset();
  await clearStorage();
  bucket = defaultBucket();
  await putCustomer(UID, { messages: 1, activity: 1 });
  await putCustomer(OTHER, { messages: 1, activity: 1 });
  objects = new Map();
  generations = new Map();
  for (const n of names(UID)) {
    generations.set(objectPath(bucket, n), await putObject(bucket, n, `bytes of ${n}`));
    objects.set(objectPath(bucket, n), PROFILE);
  }
  for (const n of names(OTHER)) await putObject(bucket, n, `bytes of ${n}`);
  requestId = await requestDeletion(UID);
}

const stillThere = async (path: string): Promise<string | null> => {
  const name = path.slice(`gs://${bucket}/`.length);
  return (await readObject(bucket, name))?.generation ?? null;
};
const requestState = async () => String((await db().doc(`deletionRequests/${requestId}`).get()).get("state"));
const holdBy = (target: string, nowMs = T0) => placeHold({ targetPath: target, reasonCode: "LITIGATION", releaseAfterMs: null, actor: { type: "staff", id: "c-2001" }, nowMs });

describe("a customer's uploads in an erasure", () => {
  beforeEach(seed);

  it("are planned with their generations, deleted in a delete window, and named in evidence as gs://bucket/name#generation", async () => {
    const plan = await planSubject({ type: "user", uid: UID, tenantId: "t-acme" }, AFTER_GRACE);
    expect(plan.delete.filter((p) => p.startsWith("gs://"))).toEqual([...objects.keys()].sort());
    expect(plan.objects).toEqual([...generations].map(([path, generation]) => ({ path, generation })).sort((a, b) => (a.path < b.path ? -1 : 1)));
    const summary = await runNightlyPurge(runOptions({ sweep: false }));
    expect((summary.units as UnitReport[])[0]?.outcome).toBe("DONE");
    for (const p of objects.keys()) expect(await stillThere(p), p).toBeNull();
    // The other customer's uploads are untouched.
    for (const n of names(OTHER)) expect(await readObject(bucket, n), n).not.toBeNull();
    expect(await requestState()).toBe("PURGED");
    const entries = await expectChainVerifies();
    const deleted = objectDeletions(entries);
    expect(deleted.map((d) => `${d.path}#${d.generation}`).sort()).toEqual([...generations].map(([p, g]) => `${p}#${g}`).sort());
    // Each PURGE_OBJECTS entry names its batch record, whose items carry the generation decided on and the heldWith document.
    for (const e of entries.filter((x) => x.action === "PURGE_OBJECTS")) {
      const rec = (await db().doc(`retentionJobs/purge-${requestId}/batches/${String(e.detail?.batch)}`).get()).data()!;
      expect(rec.kind).toBe("objects");
      for (const line of String(e.detail?.objects).split("\n")) {
        const label = parseObjectLabel(line.split(" ")[0]!)!;
        expect((rec.items as { path: string; version: string; heldWith: string }[]).find((i) => i.path === label.path)).toMatchObject({ version: label.generation, heldWith: PROFILE });
      }
    }
    // The objects went before the profile they are held with (objects are the first stage).
    const firstDoc = entries.filter((x) => x.action === "PURGE_BATCH").sort((a, b) => a.atMs - b.atMs)[0]!;
    for (const d of deleted) expect(await committedBefore(d.entry, firstDoc)).toBe(true);
    // `retention explain gs://bucket/name` finds the entry.
    const [first] = [...objects.keys()];
    const explained = await explainEvidence({ kind: "path", value: first! });
    expect(explained.entries.filter((e) => e.role === "match").map((e) => e.action)).toEqual(["PURGE_OBJECTS"]);
    expect(explained.verification.ok).toBe(true);
    // "Fully gone by" waits out the buckets' soft delete (7 days by default) as well as the recovery windows.
    const req = (await db().doc(`deletionRequests/${requestId}`).get()).data()!;
    expect(req.fullyGoneByBasis).toMatchObject({ storageSoftDeleteDays: 7 });
    expect(req.objectsErased).toBe(true);
  });

  it("are kept and marked under a hold on the profile, and go after its release", async () => {
    const { holdId } = await holdBy(PROFILE);
    for (const p of objects.keys()) {
      const o = await readObject(bucket, p.slice(`gs://${bucket}/`.length));
      expect(o?.holdIds, p).toEqual([holdId]);
    }
    await runNightlyPurge(runOptions({ sweep: false }));
    for (const [p, g] of generations) expect(await stillThere(p), p).toBe(g);
    expect(await requestState()).toBe("RETAINED_UNDER_HOLD");
    const retained = (await db().doc(`deletionRequests/${requestId}`).get()).get("retainedUnderHold") as { paths: string[] };
    for (const p of objects.keys()) expect(retained.paths).toContain(p);
    await releaseHoldById({ holdId, reason: "case closed", actor: { type: "staff", id: "c-2002" }, nowMs: AFTER_GRACE + 1000 });
    for (const p of objects.keys()) expect((await readObject(bucket, p.slice(`gs://${bucket}/`.length)))?.holdIds, p).toEqual([]);
    await runNightlyPurge(runOptions({ sweep: false, nowMs: AFTER_GRACE + DAY_MS, asOfMs: AFTER_GRACE + DAY_MS }));
    for (const p of objects.keys()) expect(await stillThere(p), p).toBeNull();
    expect(await requestState()).toBe("PURGED");
    const entries = await expectChainVerifies();
    await expectHoldsFenced(entries, new Set(), objects);
  });
});

describe("the delete window against a hold placement, with real concurrency", () => {
  beforeEach(seed);

  it("a hold placed while a window is open waits: HOLD_PLACED lands after the window's last delete", async () => {
    let placing: Promise<{ holdId: string }> | null = null;
    let recordActiveAt = 0;
    await runNightlyPurge(
      runOptions({
        sweep: false,
        batchSize: 10,
        hook: async (ctx: PurgeHookContext) => {
          if (ctx.point !== "inObjectWindow" || placing) return;
          // The placement runs beside the purge; its first transaction commits the record ACTIVE while the window
          // is open, then it waits for the window before HOLD_PLACED.
          placing = holdBy(PROFILE);
          for (;;) {
            const held = await db().collection("retentionHolds").where("targetPath", "==", PROFILE).get();
            if (!held.empty) break;
            await new Promise((r) => setTimeout(r, 20));
          }
          recordActiveAt = Date.now();
        },
      }),
    );
    expect(placing).not.toBeNull();
    const { holdId } = await placing!;
    expect(recordActiveAt).toBeGreaterThan(0);
    // The window was decided before the hold: its objects were deleted.
    for (const p of objects.keys()) expect(await stillThere(p), p).toBeNull();
    const entries = await expectChainVerifies();
    const placed = entries.find((e) => e.action === "HOLD_PLACED" && e.holdId === holdId)!;
    const deletions = objectDeletions(entries);
    expect(deletions).toHaveLength(objects.size);
    for (const d of deletions) {
      expect(d.decidedGeneration).toBeLessThan(fenceGenerationOf(placed));
      expect(await committedBefore(d.entry, placed), "HOLD_PLACED after the window's deletes").toBe(true);
      expect(String(placed.detail?.windows)).toContain(d.window!);
    }
    // The record was ACTIVE before the window closed (the placement really overlapped it).
    const rec = await db().doc(`retentionHolds/${holdId}`).get();
    expect(rec.get("placement.state")).toBe("PLACED");
    expect(await expectHoldsFenced(entries, new Set(), objects)).toBeGreaterThan(0);
  });

  it("a placement whose process dies after its record, before HOLD_PLACED, is completed when the hold's flagging resumes", async () => {
    let child: ReturnType<typeof spawn> | null = null;
    let holdId = "";
    // A window long enough for another process to start and place its hold inside it, on a loaded machine.
    process.env.RETENTION_STORAGE_DELETE_WINDOW_SECONDS = "60";
    try {
      await runNightlyPurge(
        runOptions({
          sweep: false,
          batchSize: 10,
          hook: async (ctx: PurgeHookContext) => {
            if (ctx.point !== "inObjectWindow" || child) return;
            // Another OS process places the hold; its first transaction commits the record ACTIVE and waiting for this
            // window, and the process is killed before it can record HOLD_PLACED.
            // One process (node with tsx's loader, not the tsx launcher, which would leave its child running).
            child = spawn(process.execPath, ["--import", "tsx", join(__dirname, "hold-placer.ts"), JSON.stringify({ targets: [PROFILE], delaysMs: [0] })], {
              env: { ...process.env, RETENTION_DATABASE_ID: PURGE_TEST_DATABASE },
              stdio: "ignore",
            });
            for (;;) {
              const held = await db().collection("retentionHolds").where("targetPath", "==", PROFILE).get();
              if (!held.empty) {
                expect(held.docs[0]!.get("placement.state"), "the placement found the open window").toBe("WAITING");
                holdId = held.docs[0]!.id;
                break;
              }
              await new Promise((r) => setTimeout(r, 20));
            }
            child.kill("SIGKILL");
          },
        }),
      );
    } finally {
      process.env.RETENTION_STORAGE_DELETE_WINDOW_SECONDS = "5";
    }
    expect(holdId).not.toBe("");
    // The record protects from its first transaction; its HOLD_PLACED is missing until someone completes it.
    let entries = await expectChainVerifies();
    expect(entries.filter((e) => e.action === "HOLD_PLACED" && e.holdId === holdId)).toEqual([]);
    const rec = await db().doc(`retentionHolds/${holdId}`).get();
    expect(rec.get("state")).toBe("ACTIVE");
    expect(rec.get("placement.state")).toBe("WAITING");
    // The nightly run takes up a hold whose flagging stalled: it records HOLD_PLACED, then the flagging.
    expect(await resumeHoldApplications(applyHoldNow, Date.now() + 11 * 60_000)).toEqual([holdId]);
    expect((await db().doc(`retentionHolds/${holdId}`).get()).get("placement.state")).toBe("PLACED");
    entries = await expectChainVerifies();
    const placed = entries.filter((e) => e.action === "HOLD_PLACED" && e.holdId === holdId);
    expect(placed).toHaveLength(1);
    const applied = entries.find((e) => e.action === "HOLD_APPLIED" && e.holdId === holdId)!;
    expect(await committedBefore(placed[0]!, applied)).toBe(true);
    // The placement found the window open (it waited for it); each object either went in that window (decided
    // before the hold, its deletion before HOLD_PLACED) or, if the window ran out while the other process started,
    // was decided again under the hold and kept. The ledger's order says which, for each.
    const windowId = (await db().collection("retentionJobs/storage-windows/open").get()).docs.map((d) => d.id);
    expect(String(placed[0]!.detail?.windows ?? "")).toMatch(/__/);
    expect(windowId).toEqual([]);
    const deleted = new Set(objectDeletions(entries).map((d) => d.path));
    for (const [p, g] of generations) expect(await stillThere(p), p).toBe(deleted.has(p) ? null : g);
    expect(await expectHoldsFenced(entries, new Set(), objects)).toBe(objects.size);
  });

  it("a hold placed before the decision keeps the objects: the window's decision sees it", async () => {
    let holdId = "";
    await runNightlyPurge(
      runOptions({
        sweep: false,
        hook: async (ctx: PurgeHookContext) => {
          // The plan has decided to delete them; the hold lands before the object batch's transaction.
          if (ctx.point === "afterStart" && holdId === "") ({ holdId } = await holdBy(PROFILE));
        },
      }),
    );
    for (const [p, g] of generations) expect(await stillThere(p), p).toBe(g);
    const entries = await expectChainVerifies();
    expect(objectDeletions(entries)).toEqual([]);
    const lines = entries.filter((e) => e.action === "PURGE_OBJECTS").flatMap((e) => String(e.detail?.objects).split("\n"));
    expect(lines.sort()).toEqual([...generations].map(([p, g]) => `${p}#${g} held ${holdId}`).sort());
    expect(await requestState()).toBe("RETAINED_UNDER_HOLD");
    await expectHoldsFenced(entries, new Set(), objects);
  });

  it("a runner stalled past its window deletes nothing more, and the next window decides again under the hold", async () => {
    let calls = 0;
    let stall: Promise<void> | null = null;
    let placing: Promise<{ holdId: string }> | null = null;
    let window: { id: string; deleteByMs: number } | null = null;
    await runNightlyPurge(
      runOptions({
        sweep: false,
        batchSize: 10,
        hook: async (ctx: PurgeHookContext) => {
          if (ctx.point !== "beforeObjectDelete") return;
          // The first delete goes through; then the runner stalls (for real, on the wall clock) until past its
          // window's end, and a hold on the profile lands meanwhile.
          if (++calls === 1) return;
          stall ??= (async () => {
            const open = (await db().collection("retentionJobs/storage-windows/open").get()).docs[0]!;
            window = { id: open.id, deleteByMs: open.get("deleteByMs") as number };
            placing = holdBy(PROFILE);
            while (Date.now() <= window.deleteByMs + 100) await new Promise((r) => setTimeout(r, 50));
          })();
          await stall;
        },
      }),
    );
    expect(calls).toBeGreaterThan(1);
    const { holdId } = await placing!;
    const entries = await expectChainVerifies();
    // One object went before the stall; the stalled deletes never started, and the next window found the rest held.
    const deletions = objectDeletions(entries);
    expect(deletions).toHaveLength(1);
    const kept = [...generations].filter(([p]) => p !== deletions[0]!.path);
    for (const [p, g] of kept) expect(await stillThere(p), p).toBe(g);
    const lines = entries.filter((e) => e.action === "PURGE_OBJECTS").flatMap((e) => String(e.detail?.objects).split("\n"));
    for (const [p, g] of kept) expect(lines).toContain(`${p}#${g} held ${holdId}`);
    expect(await requestState()).toBe("RETAINED_UNDER_HOLD");
    // The placement found the window and waited for its end; its HOLD_PLACED names it.
    const placed = entries.find((e) => e.action === "HOLD_PLACED" && e.holdId === holdId)!;
    expect(String(placed.detail?.windows).split(",")).toContain(window!.id);
    expect(placed.atMs).toBeGreaterThan(0);
    await expectHoldsFenced(entries, new Set(), objects);
  });

  it("a new upload of the same name between decision and delete is not deleted by that decision: reported changed, then decided again", async () => {
    const [target] = [...objects.keys()];
    const name = target!.slice(`gs://${bucket}/`.length);
    let newGeneration = "";
    await runNightlyPurge(
      runOptions({
        sweep: false,
        batchSize: 10,
        hook: async (ctx: PurgeHookContext) => {
          if (ctx.point === "inObjectWindow" && newGeneration === "") newGeneration = await overwriteObject(bucket, name, generations.get(target!)!, "uploaded again");
        },
      }),
    );
    expect(newGeneration).not.toBe("");
    const entries = await expectChainVerifies();
    const lines = entries.filter((e) => e.action === "PURGE_OBJECTS").flatMap((e) => String(e.detail?.objects).split("\n"));
    // The window's decision was about the old generation: it reported it changed and deleted nothing of the name.
    expect(lines).toContain(`${target}#${generations.get(target!)} changed to #${newGeneration}`);
    expect(lines).not.toContain(`${target}#${generations.get(target!)} deleted`);
    // The final sweep found the new generation, decided it in a late batch of its own, and deleted it there.
    expect(lines).toContain(`${target}#${newGeneration} deleted`);
    const late = entries.find((e) => e.action === "PURGE_OBJECTS" && e.detail?.stage === "late-objects")!;
    expect(late).toBeDefined();
    expect(await stillThere(target!)).toBeNull();
    expect(await requestState()).toBe("PURGED");
  });
});
