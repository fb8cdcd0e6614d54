/**
 * The real operator CLI, run as `npx retention <command>` in a child process from the repo root, against the
 * emulators the harness started. Exit codes are the contract: 0 all good, 1 findings or a failed
 * verification, 2 usage or connection error.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { appendFile, mkdtemp, readFile, rm } from "node:fs/promises";
import { createHash } from "node:crypto";
import { createServer } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { FieldValue } from "firebase-admin/firestore";
import { beforeAll, describe, expect, it } from "vitest";
import { evidenceDocId } from "../../../functions/src/evidence/rules";
import { recordEvidence, shardOfKey } from "../../../functions/src/evidence/store";
import { COLLECTIONS } from "../../../functions/src/platform/firestore";
import { planSubject } from "../../../functions/src/plan/planning";
import { clearAuth, clearFirestore, db } from "../../helpers/emulator";
import { seedExample } from "../../helpers/cli";
import { repoRoot } from "../../helpers/policy";
import { clearStorage, putObject } from "../../helpers/storage";
import { freshGovernedFields } from "../../../functions/src/kernel/governed-write";
import { governedToFirestore } from "../../../functions/src/platform/governed-doc";
import { policy } from "../../../functions/src/platform/registry";
import { defaultBucket } from "../../../functions/src/platform/storage";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function spawnRun(file: string, args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd: repoRoot, env, timeout: 90_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** Exactly as an operator types it: `npx retention ...` from the repo root (the root package's bin). */
const npxRetention = (args: string[], env: NodeJS.ProcessEnv = process.env) => spawnRun("npx", ["retention", ...args], env);

/** The same bin without npx's start-up cost, for the many calls that test the CLI rather than npx. */
const retention = (args: string[], env: NodeJS.ProcessEnv = process.env) => spawnRun(process.execPath, [join(repoRoot, "bin", "retention.js"), ...args], env);

const json = <T = Record<string, unknown>>(r: Run): T => JSON.parse(r.stdout) as T;

/** A port nothing listens on: bound once by us, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

describe("npx retention", () => {
  beforeAll(async () => {
    if (!existsSync(join(repoRoot, "functions", "lib", "cli", "main.js"))) {
      throw new Error("functions/lib/cli/main.js is missing: run `npm run build` before the CLI tests.");
    }
    await clearFirestore();
    await clearAuth();
  });

  it("--help lists every command and the exit codes; each command has its own --help", async () => {
    const r = await npxRetention(["--help"]);
    expect(r.code).toBe(0);
    for (const c of ["audit", "verify-evidence", "export-evidence", "plan", "run", "report", "export"]) expect(r.stdout).toContain(`  ${c} `);
    expect(r.stdout).toContain("0 all good, 1 findings or a failed verification, 2 usage or connection error");
    const a = await retention(["audit", "--help"]);
    expect(a.code).toBe(0);
    expect(a.stdout).toMatch(/^Usage: retention audit/);
    expect(a.stdout).toContain("ORPHANED_SUBJECT");
    const p = await retention(["plan", "--help"]);
    expect(p.stdout).toContain("--subject <uid>");
  });

  it("usage errors exit 2 without touching Firestore", async () => {
    const unreachable = { ...process.env, FIRESTORE_EMULATOR_HOST: `127.0.0.1:${await closedPort()}` };
    for (const args of [[], ["bogus"], ["audit", "--bogus"], ["audit", "extra"], ["plan"], ["plan", "--subject", "u/1001"], ["run"], ["run", "compactEverything"], ["audit", "--as-of", "yesterday"]]) {
      const r = await retention(args, unreachable);
      expect(r.code, `retention ${args.join(" ")}: ${r.stderr}`).toBe(2);
      expect(r.stderr).not.toContain("Cannot reach Firestore");
    }
    const noTarget = { ...process.env };
    delete noTarget.FIRESTORE_EMULATOR_HOST;
    delete noTarget.GCLOUD_PROJECT;
    delete noTarget.GOOGLE_CLOUD_PROJECT;
    const r = await retention(["audit"], noTarget);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("No target");
    const asOf = await retention(["run", "retentionAudit", "--as-of", "2027-01-01T00:00:00Z", "--project", "demo-nowhere"], noTarget);
    expect(asOf.code).toBe(2);
    expect(asOf.stderr).toContain("--as-of is accepted only on the emulators");
  });

  it("exits 2 with a clear message when Firestore cannot be reached", async () => {
    const env = { ...process.env, FIRESTORE_EMULATOR_HOST: `127.0.0.1:${await closedPort()}`, RETENTION_CONNECT_TIMEOUT_MS: "2000" };
    const started = Date.now();
    const r = await npxRetention(["audit"], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("Cannot reach Firestore");
    expect(Date.now() - started).toBeLessThan(30_000);
    const j = await retention(["verify-evidence", "--json"], env);
    expect(j.code).toBe(2);
    expect(json(j)).toMatchObject({ ok: false, error: { kind: "CONNECTION" } });
  });

  it("the AtlasMart seed, then audit exits 0; 1 while a finding exists; 0 again once repaired", async () => {
    expect((await seedExample(["atlasmart"])).code).toBe(0);
    const again = await seedExample(["atlasmart", "--json"]);
    expect(again.code).toBe(0);
    expect(json(again)).toEqual({ documents: 18, users: 5 });

    const clean = await npxRetention(["audit"]);
    expect(clean.code, clean.stdout + clean.stderr).toBe(0);
    expect(clean.stdout).toContain("OK: no findings");

    await db().doc("events/e-001").update({ expireAt: FieldValue.delete() });
    const bad = await npxRetention(["audit"]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toMatch(/MISSING_TTL\s+events\/e-001/);
    const badJson = await retention(["audit", "--json"]);
    expect(badJson.code).toBe(1);
    expect(json(badJson)).toMatchObject({ ok: false, totalFindings: 1, byCode: { MISSING_TTL: 1 }, findings: [{ path: "events/e-001", code: "MISSING_TTL" }] });

    expect((await seedExample(["atlasmart"])).code).toBe(0);
    const repaired = await retention(["audit", "--json"]);
    expect(repaired.code).toBe(0);
    expect(json(repaired)).toMatchObject({ ok: true, totalFindings: 0 });
  });

  it("verify-evidence exits 0 on an intact ledger and 1, naming the entries, once one is edited and another removed", async () => {
    await recordEvidence(
      "cli-test",
      ...Array.from({ length: 4 }, (_, i) => ({
        action: "TEST_ENTRY",
        actor: { type: "system" as const, id: "cli-test" },
        decision: { reason: "TEST" },
        policyVersion: "v1",
        atMs: 1_900_000_000_000 + i,
      })),
    );
    const ok = await retention(["verify-evidence", "--json"]);
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    expect(json(ok)).toMatchObject({ ok: true, macs: "checked", anchors: { source: "emulator database evidence-anchors" } });
    const shard = shardOfKey("cli-test");
    const col = db().collection(COLLECTIONS.deletionAudits);
    const saved = [(await col.doc(evidenceDocId(shard, 2)).get()).data()!, (await col.doc(evidenceDocId(shard, 3)).get()).data()!];
    await col.doc(evidenceDocId(shard, 2)).update({ atMs: 42 });
    await col.doc(evidenceDocId(shard, 3)).delete();
    const bad = await retention(["verify-evidence"]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toMatch(new RegExp(`EDITED\\s+${shard}\\s+2\\s+${evidenceDocId(shard, 2)}`));
    expect(bad.stdout).toMatch(new RegExp(`REMOVED\\s+${shard}\\s+3\\s`));
    expect(bad.stdout).toContain("FAILED");
    await col.doc(evidenceDocId(shard, 2)).set(saved[0]!);
    await col.doc(evidenceDocId(shard, 3)).set(saved[1]!);
    const unkeyed = await retention(["verify-evidence", "--without-key"]);
    expect(unkeyed.code).toBe(0);
    expect(unkeyed.stdout).toMatch(/MACs\s+NOT checked/);
  });

  it("verify-evidence on a project needs the anchors named (or refused on purpose), before it connects anywhere", async () => {
    const project = { ...process.env, FIRESTORE_EMULATOR_HOST: "", RETENTION_EVIDENCE_KEY: "p".repeat(64) };
    const r = await retention(["verify-evidence", "--project", "demo-nowhere"], project);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("Name the anchors");
    const both = await retention(["verify-evidence", "--anchors", "x", "--without-anchors"]);
    expect(both.code).toBe(2);
  });

  it("run evidenceAnchor anchors the heads; export-evidence writes a bundle that verifies offline, and a doctored bundle does not", async () => {
    const anchored = await retention(["run", "evidenceAnchor", "--json"]);
    expect(anchored.code, anchored.stderr).toBe(0);
    expect(json(anchored)).toMatchObject({ job: "evidenceAnchor", sinks: ["firestore:evidence-anchors"] });
    expect(json<{ chains: number }>(anchored).chains).toBeGreaterThan(0);

    const out = join(mkdtempSync(join(tmpdir(), "evidence-bundle-")), "bundle");
    const exported = await retention(["export-evidence", "--out", out, "--json"]);
    expect(exported.code, exported.stdout + exported.stderr).toBe(0);
    const ex = json<{ manifest: { chains: { chain: string; entries: number }[]; anchors: { count: number } }; verification: { ok: boolean; macs: string } }>(exported);
    expect(ex.verification).toMatchObject({ ok: true, macs: "checked" });
    expect(ex.manifest.anchors.count).toBeGreaterThan(0);
    expect(await retention(["export-evidence", "--out", out])).toMatchObject({ code: 2 });

    // The auditor: no database, no project, no key; the bundle and the anchors only.
    const offline = { PATH: process.env.PATH, HOME: process.env.HOME };
    const audit = await retention(["verify-evidence", "--bundle", out, "--without-key", "--json"], offline);
    expect(audit.code, audit.stdout + audit.stderr).toBe(0);
    expect(json(audit)).toMatchObject({ ok: true, macs: "unchecked", anchors: { count: ex.manifest.anchors.count } });

    // A bundle edited in transit fails its manifest; an edit with the manifest made to match fails the chain.
    const chain = ex.manifest.chains.find((c) => c.chain === shardOfKey("cli-test"))!;
    const file = join(out, "chains", `${chain.chain}.jsonl`);
    const lines = readFileSync(file, "utf8").split("\n");
    const first = JSON.parse(lines[0]!) as { id: string; entry: { atMs: number } };
    first.entry.atMs = 7;
    lines[0] = JSON.stringify(first);
    writeFileSync(file, lines.join("\n"));
    const damaged = await retention(["verify-evidence", "--bundle", out, "--without-key"], offline);
    expect(damaged.code).toBe(2);
    expect(damaged.stderr).toContain("does not match the SHA-256");
    const manifestPath = join(out, "manifest.json");
    const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as { files: Record<string, string> };
    manifest.files[`chains/${chain.chain}.jsonl`] = createHash("sha256").update(readFileSync(file)).digest("hex");
    writeFileSync(manifestPath, JSON.stringify(manifest));
    const doctored = await retention(["verify-evidence", "--bundle", out, "--without-key"], offline);
    expect(doctored.code).toBe(1);
    expect(doctored.stdout).toMatch(new RegExp(`EDITED\\s+${chain.chain}\\s+1\\s`));
  });

  it("plan prints the same manifest and hash as planSubject, run after run", async () => {
    const a = await retention(["plan", "--subject", "u-1001", "--tenant", "t-acme", "--json"]);
    const b = await retention(["plan", "--subject", "u-1001", "--tenant", "t-acme", "--json"]);
    expect(a.code).toBe(0);
    const pa = json<{ manifestHash: string; delete: string[] }>(a);
    expect(pa.manifestHash).toMatch(/^[0-9a-f]{64}$/);
    expect(json<{ manifestHash: string }>(b).manifestHash).toBe(pa.manifestHash);
    const direct = await planSubject({ type: "user", uid: "u-1001", tenantId: "t-acme" }, Date.now());
    expect(pa.manifestHash).toBe(direct.manifestHash);
    expect(pa.delete).toContain("userDirectory/u-1001");
    // A uid alone: the registry's scope lookups find her tenant, and the plan is the same.
    const alone = await retention(["plan", "--subject", "u-1001", "--json"]);
    expect(alone.code, alone.stderr).toBe(0);
    expect(json<{ manifestHash: string; subject: unknown }>(alone)).toMatchObject({ manifestHash: pa.manifestHash, subject: { type: "user", uid: "u-1001", tenantId: "t-acme" } });
    const table = await retention(["plan", "--tenant", "t-acme"]);
    expect(table.code).toBe(0);
    expect(table.stdout).toContain("manifestHash");
    expect(table.stdout).toContain("tenant t-acme");
    // --scope is the general name; --tenant its alias: the same plan.
    const scoped = await retention(["plan", "--subject", "u-1001", "--scope", "t-acme", "--json"]);
    expect(json<{ manifestHash: string; subjectRef: unknown }>(scoped)).toMatchObject({ manifestHash: pa.manifestHash, subjectRef: { type: "user", uid: "u-1001", scope: "t-acme" } });
    const tenantPlan = json<{ manifestHash: string }>(await retention(["plan", "--tenant", "t-acme", "--json"]));
    expect(json<{ manifestHash: string }>(await retention(["plan", "--scope", "t-acme", "--json"])).manifestHash).toBe(tenantPlan.manifestHash);
    const unknown = await retention(["plan", "--scope", "t-nowhere", "--json"]);
    expect(unknown.code).toBe(2);
    expect(json(unknown)).toMatchObject({ ok: false, error: { kind: "SUBJECT_NOT_FOUND" } });
  });

  it("run retentionAudit: records the run in evidence, honours --dry-run and --as-of, and exits by its findings", async () => {
    await clearFirestore();
    expect((await seedExample(["atlasmart"])).code).toBe(0);
    const dry = await retention(["run", "retentionAudit", "--dry-run", "--json"]);
    expect(dry.code).toBe(0);
    expect(json(dry)).toMatchObject({ job: "retentionAudit", dryRun: true, ok: true, reportId: null });
    expect((await db().collection(COLLECTIONS.retentionReports).get()).size).toBe(0);

    // A year on, every TTL value in the demo is long past: the sweeper is overdue everywhere.
    const later = await retention(["run", "retentionAudit", "--as-of", new Date(Date.now() + 365 * 86_400_000).toISOString(), "--json"]);
    expect(later.code).toBe(1);
    const s = json<{ asOf: string; byCode: Record<string, number>; reportId: string }>(later);
    expect(s.byCode.TTL_OVERDUE).toBeGreaterThan(0);
    expect((await db().collection(COLLECTIONS.retentionReports).doc(s.reportId).get()).exists).toBe(true);
    const runs = (await db().collection(COLLECTIONS.deletionAudits).where("action", "==", "JOB_RUN").get()).docs.map((d) => d.data());
    expect(runs).toHaveLength(2);
    expect(runs.map((r) => r.asOfMs as number | null)).toContain(Date.parse(s.asOf));
    // The operator's real identity, never a fixed name: with no --as and no RETENTION_OPERATOR, the OS user.
    expect(runs[0]).toMatchObject({ actor: { type: "staff", id: userInfo().username }, detail: { via: "cli", operatorSource: "os-user" } });
  });

  it("run records the operator it was told on the emulators (--as, else RETENTION_OPERATOR), and refuses --as on a project", async () => {
    const col = db().collection(COLLECTIONS.deletionAudits);
    const before = (await col.where("action", "==", "JOB_RUN").get()).size;
    const flagged = await retention(["run", "expiryBackfill", "--dry-run", "--as", "r-3001", "--json"]);
    expect(flagged.code, flagged.stderr).toBe(0);
    const viaEnv = await retention(["run", "expiryBackfill", "--dry-run", "--json"], { ...process.env, RETENTION_OPERATOR: "ops.oncall@example.com" });
    expect(viaEnv.code, viaEnv.stderr).toBe(0);
    // Each run's evidence is in the chain of its own correlation id: they are ordered by their time.
    const runs = (await col.where("action", "==", "JOB_RUN").get()).docs.map((d) => d.data() as { atMs: number; actor: unknown; detail: { operatorSource: string } }).sort((a, b) => a.atMs - b.atMs);
    expect(runs.slice(before).map((r) => [r.actor, r.detail.operatorSource])).toEqual([
      [{ type: "staff", id: "r-3001" }, "flag"],
      [{ type: "staff", id: "ops.oncall@example.com" }, "env"],
    ]);
    expect(runs.some((r) => (r.actor as { id: string }).id === "retention-cli")).toBe(false);
    const noEmulator = { ...process.env, FIRESTORE_EMULATOR_HOST: "" };
    const refused = await retention(["run", "expiryBackfill", "--dry-run", "--as", "r-3001", "--project", "demo-nowhere"], noEmulator);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("--as is accepted only on the emulators");
    const bad = await retention(["run", "expiryBackfill", "--dry-run", "--as", "no spaces please"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("is not an identity");
  });

  it("export writes the tenant's data with its manifest; export --verify checks it offline, exits 1 on a changed file and 2 on usage errors", async () => {
    await clearFirestore();
    expect((await seedExample(["atlasmart"])).code).toBe(0);
    const dir = await mkdtemp(join(tmpdir(), "retention-export-"));
    try {
      const out = join(dir, "t-acme");
      const written = await npxRetention(["export", "--tenant", "t-acme", "--out", out, "--json"]);
      expect(written.code, written.stderr).toBe(0);
      const m = json<{ dir: string; tenantId: string; documents: number; files: { file: string; documents: number; sha256: string }[]; sha256: string }>(written);
      expect(m).toMatchObject({ dir: out, tenantId: "t-acme", documents: 18 });
      expect(m.files.find((f) => f.file === "tenants.orders.jsonl")).toMatchObject({ documents: 2 });
      expect(m.sha256).toMatch(/^[0-9a-f]{64}$/);
      // The manifest on disk is the one printed; the verification needs no Firestore and no target at all.
      expect(JSON.parse(await readFile(join(out, "manifest.json"), "utf8"))).toMatchObject({ sha256: m.sha256 });
      const offline = { ...process.env };
      delete offline.FIRESTORE_EMULATOR_HOST;
      delete offline.GCLOUD_PROJECT;
      delete offline.GOOGLE_CLOUD_PROJECT;
      const ok = await retention(["export", "--verify", out], offline);
      expect(ok.code, ok.stderr).toBe(0);
      expect(ok.stdout).toContain("OK: the export verifies");
      // The same data exports to the same bytes.
      const again = await retention(["export", "--tenant", "t-acme", "--out", join(dir, "again"), "--json"]);
      expect(json<{ sha256: string }>(again).sha256).toBe(m.sha256);

      await appendFile(join(out, "activity.jsonl"), "{}\n");
      const bad = await retention(["export", "--verify", out, "--json"], offline);
      expect(bad.code).toBe(1);
      expect(json(bad)).toMatchObject({ ok: false, findings: [{ problem: "FILE_CHANGED", file: "activity.jsonl" }] });

      const unreachable = { ...process.env, FIRESTORE_EMULATOR_HOST: `127.0.0.1:${await closedPort()}` };
      for (const args of [["export"], ["export", "--tenant", "t-acme"], ["export", "--out", dir], ["export", "--tenant", "t/acme", "--out", dir], ["export", "--verify", out, "--tenant", "t-acme"]]) {
        const r = await retention(args, unreachable);
        expect(r.code, `retention ${args.join(" ")}: ${r.stderr}`).toBe(2);
        expect(r.stderr).not.toContain("Cannot reach Firestore");
      }
      const notEmpty = await retention(["export", "--tenant", "t-acme", "--out", out, "--json"]);
      expect(notEmpty.code).toBe(2);
      expect(json(notEmpty)).toMatchObject({ ok: false, error: { kind: "EXPORT_DIR_NOT_EMPTY" } });
      const unknown = await retention(["export", "--tenant", "t-nowhere", "--out", join(dir, "nowhere"), "--json"]);
      expect(unknown.code).toBe(2);
      expect(json(unknown)).toMatchObject({ ok: false, error: { kind: "SUBJECT_NOT_FOUND" } });
      const missing = await retention(["export", "--verify", join(dir, "no-such-dir")], offline);
      expect(missing.code).toBe(2);
      const help = await retention(["export", "--help"]);
      expect(help.code).toBe(0);
      expect(help.stdout).toContain("--verify <dir>");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("export --subject of a customer in two tenants exports both, objects included, into one verified export; --scope names one", async () => {
    await clearFirestore();
    expect((await seedExample(["atlasmart"])).code).toBe(0);
    // Cy has a profile in t-acme and in t-globex (the registry's path lookup finds both), no claim and no directory
    // entry, and an upload in each tenant's folder.
    const cy = "u-cy-two";
    const pol = policy();
    const put = async (path: string, tenantId: string, data: Record<string, unknown>) => {
      const cls = pol.classForPath(path)!;
      const now = Date.now();
      const governed = freshGovernedFields(cls, { tenantId, policyVersion: pol.version, createdAtMs: now, expireAtMs: null });
      await db().doc(path).set({ ...data, ...governedToFirestore(governed, "set") });
    };
    await put("tenants/t-globex", "t-globex", { name: "Globex" });
    for (const t of ["t-acme", "t-globex"]) await put(`tenants/${t}/users/${cy}`, t, { uid: cy, displayName: "Cy" });
    const uploads = [`tenants/t-acme/users/${cy}/receipts/r-1.pdf`, `tenants/t-globex/users/${cy}/returns/photo-1.jpg`];
    for (const name of uploads) await putObject(defaultBucket(), name, `bytes of ${name}`);
    const dir = await mkdtemp(join(tmpdir(), "retention-export-"));
    try {
      const out = join(dir, "cy");
      const written = await retention(["export", "--subject", cy, "--out", out, "--json"]);
      expect(written.code, written.stderr).toBe(0);
      const m = json<{ subject: unknown; tenantId?: string; documents: number; objects?: { name: string }[] }>(written);
      expect(m.subject).toEqual({ type: "user", uid: cy, tenantId: "", scopes: ["t-acme", "t-globex"] });
      expect(m.tenantId).toBeUndefined();
      expect(m.documents).toBe(2);
      expect((m.objects ?? []).map((o) => o.name).sort()).toEqual([...uploads].sort());
      const verified = await retention(["export", "--verify", out]);
      expect(verified.code, verified.stderr).toBe(0);
      expect(verified.stdout).toContain(`${cy} in 2 tenants (t-acme, t-globex)`);
      const inGlobex = await retention(["export", "--subject", cy, "--scope", "t-globex", "--out", join(dir, "cy-globex"), "--json"]);
      expect(inGlobex.code, inGlobex.stderr).toBe(0);
      const g = json<{ subject: unknown; objects?: { name: string }[] }>(inGlobex);
      expect(g.subject).toEqual({ type: "user", uid: cy, tenantId: "t-globex" });
      expect((g.objects ?? []).map((o) => o.name)).toEqual([uploads[1]]);
      const badUid = await retention(["export", "--subject", "u/cy", "--out", join(dir, "bad")]);
      expect(badUid.code).toBe(2);
      expect(badUid.stderr).toContain("is not a valid uid");
    } finally {
      await rm(dir, { recursive: true, force: true });
      // The bucket is shared by every suite of the run: leave it empty.
      await clearStorage();
    }
  });
});

