/**
 * An access request on the social example (the second example app: no scope kind, a second governed database, objects
 * in Cloud Storage), in-process on the emulators (docs/decisions/0040-legal-clocks-and-access.md): Ana asks for a copy
 * of her data while a hold covers her account; the build task exports everything the data map finds for her (both
 * databases, her objects) in the subject export's format; she pages it back and the files reassemble into an export
 * that verifies against its manifest and holds exactly what the data map finds. Bo and staff are refused it; it expires;
 * the asking, the building and each download are evidence. Staff run the same export for Bo, who asked by email.
 */
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SOCIAL_OBJECTS } from "../../../examples/social/data";
import { NO_SCOPE, seedSocial } from "../../../examples/social/seed";
import { SOCIAL_ANALYTICS_DATABASE, SOCIAL_DATABASE } from "../../../examples/social/registry";
import { buildAccessExport, readExportPage, requestAccessExport } from "../../../functions/src/access/index";
import { exportSubjectDataHandler } from "../../../functions/src/entrypoints/callable/export-subject-data";
import { getDataExportHandler } from "../../../functions/src/entrypoints/callable/get-data-export";
import { requestDataExportHandler } from "../../../functions/src/entrypoints/callable/request-data-export";
import type { Caller } from "../../../functions/src/entrypoints/callable/shared";
import { verifyEvidence } from "../../../functions/src/evidence/index";
import { verifyExportDir } from "../../../functions/src/export/index";
import { placeHold } from "../../../functions/src/holds/index";
import { PRIMARY_CELL } from "../../../functions/src/kernel/policy";
import { objectPath } from "../../../functions/src/kernel/storage-map";
import { discoverObjects, discoverSubject } from "../../../functions/src/plan/index";
import type { Subject } from "../../../functions/src/plan/rules";
import { db, inCell } from "../../../functions/src/platform/firestore";
import { registryPolicy } from "../../../functions/src/platform/registry";
import { settings } from "../../../functions/src/platform/settings";
import { clearAuth, clearFirestore } from "../../helpers/emulator";
import { onSocialExample } from "../../helpers/social";
import { clearStorage } from "../../helpers/storage";
import { refusal } from "../../helpers/refusal";

onSocialExample();

const ANA: Caller = { uid: "u-ana", tenantId: null, roles: [] };
const BO: Caller = { uid: "u-bo", tenantId: null, roles: [] };
const DANA: Caller = { uid: "s-dana", tenantId: null, roles: ["compliance"] };
const HOUR = 3_600_000;
/** The builds handed to the task queue: no Cloud Tasks emulator here, so the suite runs the task's body itself. */
const queued: string[] = [];
const enqueue = (exportId: string): Promise<void> => {
  queued.push(exportId);
  return Promise.resolve();
};

/** Every document the data map finds for a subject, in every governed database, as `database:path`. */
async function dataMapOf(subject: Subject): Promise<string[]> {
  const out: string[] = [];
  for (const cell of registryPolicy().cells()) {
    await inCell(cell, async () => {
      for await (const d of discoverSubject(subject)) out.push(`${cell}:${d.path}`);
    });
  }
  return [...new Set(out)].sort();
}

/** Pages an export back as its owner and writes its files into `dir`, as a client would. Returns the pages read. */
async function download(exportId: string, caller: Caller, dir: string): Promise<number> {
  const chunks = new Map<string, Buffer[]>();
  let from: number | null = 0;
  let pages = 0;
  while (from !== null) {
    const page = await getDataExportHandler({ exportId, from }, caller);
    pages++;
    for (const p of page.parts) {
      const list = chunks.get(p.file) ?? [];
      list[p.chunk] = Buffer.from(p.data, p.encoding === "base64" ? "base64" : "utf8");
      chunks.set(p.file, list);
    }
    from = page.next;
  }
  for (const [file, parts] of chunks) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), Buffer.concat(parts));
  }
  return pages;
}

describe("an access request on the social example", () => {
  let dir: string;
  let exportId: string;
  let t0: number;

  beforeAll(async () => {
    expect(settings.databaseId()).toBe(SOCIAL_DATABASE);
    await clearFirestore(SOCIAL_DATABASE);
    await clearFirestore(SOCIAL_ANALYTICS_DATABASE);
    await clearAuth();
    await clearStorage();
    t0 = Date.now();
    await seedSocial({ nowMs: t0, withObjects: true });
    dir = mkdtempSync(join(tmpdir(), "access-export-"));
  }, 120_000);
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await clearStorage();
  });

  it("Ana asks for her data while a hold covers her account: the export is built all the same", async () => {
    // A hold does not block an access request: it stops deletion, and an export deletes nothing.
    await placeHold({ targetPath: "users/u-ana", reasonCode: "LITIGATION", releaseAfterMs: null, actor: { type: "staff", id: "s-dana" }, nowMs: t0 });
    const asked = await requestDataExportHandler({}, ANA, enqueue);
    expect(asked).toMatchObject({ state: "PENDING", created: true, expiresAt: null });
    exportId = asked.exportId;
    expect(queued).toEqual([exportId]);
    // Asking again while it is being built returns it.
    expect(await requestDataExportHandler({}, ANA, enqueue)).toMatchObject({ exportId, created: false });
    expect(queued).toEqual([exportId]);
    // Not downloadable before it is built.
    expect(await refusal(getDataExportHandler({ exportId }, ANA))).toBe("failed-precondition/EXPORT_NOT_READY");
    expect(await buildAccessExport(exportId, Date.now())).toBe("BUILT");
    // A redelivered task changes nothing.
    expect(await buildAccessExport(exportId, Date.now())).toBe("ALREADY_BUILT");
    const record = (await db().doc(`dataExports/${exportId}`).get()).data()!;
    expect(record).toMatchObject({ uid: "u-ana", state: "READY", source: "subject", scopes: [NO_SCOPE] });
    const expireAt = (record.expireAt as { toMillis(): number }).toMillis();
    expect(expireAt - (record.readyAt as { toMillis(): number }).toMillis()).toBe(settings.accessExportMs());
    // Every part carries the TTL field, with the record's expiry.
    const parts = await db().collection(`dataExports/${exportId}/exportParts`).get();
    expect(parts.size).toBe(record.parts as number);
    for (const p of parts.docs) expect((p.get("expireAt") as { toMillis(): number }).toMillis()).toBe(expireAt);
  });

  it("she pages it back; the files verify against the manifest and hold exactly what the data map finds, her objects included", async () => {
    const pages = await download(exportId, ANA, join(dir, "ana"));
    expect(pages).toBeGreaterThanOrEqual(1);
    const verified = await verifyExportDir(join(dir, "ana"));
    expect(verified).toMatchObject({ ok: true, findings: [] });
    const manifest = verified.manifest!;
    expect(manifest.subject).toEqual({ type: "user", uid: "u-ana", tenantId: NO_SCOPE });
    // The documents: every line's path, by database (a file of another database is named by it), against the data map.
    const exported: string[] = [];
    for (const f of manifest.files) {
      const cell = f.file.includes("--") ? f.file.split("--")[0]! : PRIMARY_CELL;
      for (const line of readFileSync(join(dir, "ana", f.file), "utf8").split("\n").filter(Boolean)) exported.push(`${cell}:${(JSON.parse(line) as { path: string }).path}`);
    }
    const ana: Subject = { type: "user", uid: "u-ana", tenantId: NO_SCOPE };
    expect(exported.sort()).toEqual(await dataMapOf(ana));
    expect(exported.some((p) => p.startsWith("analytics:"))).toBe(true);
    expect(exported).toContain(`${PRIMARY_CELL}:users/u-ana`);
    // The objects: exactly the ones her storage entries reach, bytes as uploaded.
    const objects: string[] = [];
    for await (const o of discoverObjects(ana)) objects.push(o.path);
    expect(manifest.objects!.map((o) => objectPath(o.bucket, o.name)).sort()).toEqual(objects.sort());
    for (const o of manifest.objects!) expect(readFileSync(join(dir, "ana", o.file), "utf8")).toBe(SOCIAL_OBJECTS.find((x) => x.name === o.name)!.body);
    // Nobody else's: Bo's posts are not in it.
    expect(exported.some((p) => p.includes("u-bo") && p.includes("posts/p-bo"))).toBe(false);
  });

  it("only Ana may fetch it: Bo and compliance are refused, and after its expiry she is too", async () => {
    expect(await refusal(getDataExportHandler({ exportId }, BO))).toBe("permission-denied/NOT_OWNER");
    expect(await refusal(getDataExportHandler({ exportId }, DANA))).toBe("permission-denied/NOT_OWNER");
    expect(await refusal(getDataExportHandler({ exportId: "no-such-export" }, ANA))).toBe("not-found/EXPORT_NOT_FOUND");
    const expireAt = ((await db().doc(`dataExports/${exportId}`).get()).get("expireAt") as { toMillis(): number }).toMillis();
    expect(await refusal(readExportPage({ exportId, uid: "u-ana", from: 0, nowMs: expireAt }))).toBe("failed-precondition/EXPORT_EXPIRED");
  });

  it("the asking, the building and each download are evidence, and the chain verifies", async () => {
    await download(exportId, ANA, join(dir, "again"));
    const entries = (await db().collection("deletionAudits").where("correlationId", "==", exportId).get()).docs.map((d) => d.data());
    const actions = entries.map((e) => e.action as string).sort();
    expect(actions).toEqual(["ACCESS_EXPORT_DOWNLOADED", "ACCESS_EXPORT_DOWNLOADED", "ACCESS_EXPORT_READY", "ACCESS_EXPORT_REQUESTED"]);
    const ready = entries.find((e) => e.action === "ACCESS_EXPORT_READY")!;
    const manifest = JSON.parse(readFileSync(join(dir, "ana", "manifest.json"), "utf8")) as { sha256: string };
    expect(ready.manifestHash).toBe(manifest.sha256);
    expect((await db().doc(`dataExports/${exportId}`).get()).get("downloads")).toBe(2);
    expect((await verifyEvidence()).ok).toBe(true);
  });

  it("a new ask waits out the cooldown once it has expired; staff export Bo's data for his emailed request, and only he downloads it", async () => {
    const record = (await db().doc(`dataExports/${exportId}`).get()).data()!;
    const expired = (record.expireAt as { toMillis(): number }).toMillis() + 1;
    const cooldown = settings.accessExportCooldownMs();
    const requestedAt = (record.requestedAt as { toMillis(): number }).toMillis();
    const ask = (nowMs: number) => requestAccessExport({ uid: "u-ana", scopes: [NO_SCOPE], source: "subject", actor: { type: "user", id: "u-ana" }, nowMs });
    // While hers is downloadable, asking returns it; once it has expired (and the cooldown after her ask is over), a new one opens.
    expect((await ask(requestedAt + HOUR)).created).toBe(false);
    const renewed = await ask(expired);
    expect(renewed.created).toBe(true);
    // That one is being built: asking again returns it.
    expect(await ask(expired + 1)).toMatchObject({ created: false, export: { exportId: renewed.export.exportId } });
    // It failed: a failed build is no copy, so it neither blocks a new ask nor starts a cooldown (export-lifecycle.test.ts
    // fails a build for real).
    await db().doc(`dataExports/${renewed.export.exportId}`).update({ state: "FAILED" });
    const third = await ask(expired + 2);
    expect(third.created).toBe(true);
    // That one is ready and expires: within the cooldown after it, a new ask is refused and writes nothing.
    await db().doc(`dataExports/${third.export.exportId}`).update({ state: "READY", expireAt: new Date(expired + 3) });
    expect(await refusal(ask(expired + cooldown))).toBe("resource-exhausted/EXPORT_COOLDOWN");
    expect((await db().collection("dataExports").where("uid", "==", "u-ana").get()).size).toBe(3);
    expect((await ask(expired + 2 + cooldown)).created).toBe(true);

    const staff = await exportSubjectDataHandler({ uid: "u-bo", reference: "email 2026-12-02 from bo@example.test" }, DANA, enqueue);
    expect(staff).toMatchObject({ state: "PENDING", created: true });
    expect(await refusal(exportSubjectDataHandler({ uid: "u-bo", reference: "again" }, BO, enqueue))).toBe("permission-denied/NOT_COMPLIANCE");
    expect(await buildAccessExport(staff.exportId, Date.now())).toBe("BUILT");
    expect((await db().doc(`dataExports/${staff.exportId}`).get()).data()).toMatchObject({ uid: "u-bo", source: "staff", requestedBy: "s-dana", reference: "email 2026-12-02 from bo@example.test" });
    expect(await refusal(getDataExportHandler({ exportId: staff.exportId }, ANA))).toBe("permission-denied/NOT_OWNER");
    expect(await refusal(getDataExportHandler({ exportId: staff.exportId }, DANA))).toBe("permission-denied/NOT_OWNER");
    await download(staff.exportId, BO, join(dir, "bo"));
    expect(await verifyExportDir(join(dir, "bo"))).toMatchObject({ ok: true });
  });
});
