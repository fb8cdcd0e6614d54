/**
 * `retention setup` (functions/src/setup/): what a kit cannot ship, written into an adopting project between markers.
 * On a scratch project folder (no emulator, no firebase-tools): the rules and the indexes get their retention part and
 * nothing else changes; a second run changes nothing; every change is shown as a diff; the registry bundle lands in the
 * kit's codebase; instances that would share a database are refused with nothing written; an index file or a rules
 * file it cannot write safely is refused with nothing written.
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { changesText } from "../../../functions/src/cli/commands/setup";
import { checkQuery } from "../../../functions/src/indexes/rules";
import { PolicyIndex } from "../../../functions/src/kernel/policy";
import { generateRetentionRules } from "../../../functions/src/security-rules/index";
import { applyChanges, IndexFileError, planPublish, planSetup, registryQueries, SetupError } from "../../../functions/src/setup/index";
import { spliceIndexFile } from "../../../functions/src/setup/rules/index-file";
import { bucketCollisions, databaseCollisions, setEnvLine } from "../../../functions/src/setup/rules/project";
import { socialLock, socialRegistry } from "../../../examples/social/registry";

const REPO = join(__dirname, "..", "..", "..");
const PROJECT = "demo-setup";
/** The social example's current published version, and the one after it. */
const CURRENT = socialLock().at(-1)!.version;
const NEXT = `v${Number(CURRENT.slice(1)) + 1}`;
const APP_INDEX = { collectionGroup: "chats", queryScope: "COLLECTION", fields: [{ fieldPath: "memberIds", arrayConfig: "CONTAINS" }, { fieldPath: "lifecycleState", order: "ASCENDING" }] };

/** The social example's rules with the retention part left out: the team's two marker lines, nothing between them. */
function rulesWithEmptyBlock(): string {
  const text = readFileSync(join(REPO, "examples", "social", "firestore.rules"), "utf8");
  const begin = text.indexOf("// <retention:begin>");
  const end = text.indexOf("// <retention:end>");
  return `${text.slice(0, text.indexOf("\n", begin) + 1)}    ${text.slice(end)}`;
}

/** What the index file parses to, comments dropped (firebase-tools reads it as JSON with comments). */
const indexJson = (text: string): { indexes: unknown[]; fieldOverrides: unknown[] } => JSON.parse(text.replace(/^\s*\/\/.*$/gm, "")) as never;

describe("retention setup", () => {
  let cwd = "";

  /** A project that has installed the kit (instances name config folders), its own codebase, rules and indexes. */
  function project(instances: Record<string, Record<string, string>> = { retention: {} }): void {
    const cfg = (i: string) => `function-kits/retention/config-${i}`;
    const firebase = {
      functions: [
        { source: "functions", codebase: "default" },
        { kit: "retention", source: "retention", instances: Object.fromEntries(Object.keys(instances).map((i) => [i, cfg(i)])) },
      ],
      firestore: [
        { database: "(default)", rules: "firestore.rules", indexes: "firestore.indexes.json" },
        { database: "eu-shop", rules: "eu.rules", indexes: "eu.indexes.json" },
      ],
    };
    writeFileSync(join(cwd, "firebase.json"), `${JSON.stringify(firebase, null, 2)}\n`);
    writeFileSync(join(cwd, ".firebaserc"), JSON.stringify({ projects: { default: PROJECT } }));
    for (const f of ["firestore.rules", "eu.rules"]) writeFileSync(join(cwd, f), rulesWithEmptyBlock());
    for (const f of ["firestore.indexes.json", "eu.indexes.json"]) writeFileSync(join(cwd, f), `${JSON.stringify({ indexes: [APP_INDEX], fieldOverrides: [] }, null, 2)}\n`);
    mkdirSync(join(cwd, "retention"), { recursive: true });
    writeFileSync(join(cwd, "retention", "package.json"), JSON.stringify({ name: "retention-kit", dependencies: { "firestore-retention": "file:firestore-retention-0.1.0.tgz" } }));
    for (const [i, env] of Object.entries(instances)) {
      mkdirSync(join(cwd, cfg(i)), { recursive: true });
      writeFileSync(join(cwd, cfg(i), `.env.${PROJECT}`), Object.entries(env).map(([k, v]) => `${k}=${v}\n`).join(""));
    }
    cpSync(join(REPO, "examples", "social", "policies"), join(cwd, "policies"), { recursive: true });
  }

  const snapshot = (): Map<string, string> =>
    new Map(["firebase.json", "firestore.rules", "firestore.indexes.json", "eu.rules", "eu.indexes.json"].map((f) => [f, readFileSync(join(cwd, f), "utf8")]));

  beforeEach(() => {
    cwd = mkdtempSync(join(tmpdir(), "retention-setup-"));
  });
  afterEach(() => rmSync(cwd, { recursive: true, force: true }));

  it("writes the rules and indexes between markers, the registry bundle into the kit's codebase, and nothing the second time", () => {
    project();
    const before = snapshot();
    const plan = planSetup({ cwd, policies: "policies" });
    expect(plan).toMatchObject({ project: PROJECT, instance: "retention", registryVersion: CURRENT, governedDatabase: "(default)" });
    // The registry's second database (analytics) has no entry in firebase.json yet: setup adds one, with its two files.
    expect(plan.changes.map((c) => c.file).sort()).toEqual(
      ["firebase.json", "firestore.indexes.json", "firestore.rules", "firestore.analytics.rules", "firestore.analytics.indexes.json", "function-kits/retention/config-retention/.env.local", "retention/registries/retention.json"].sort(),
    );
    // The diff shows each file's change.
    const diff = changesText(cwd, plan.changes);
    expect(diff).toContain("--- a/firestore.rules");
    expect(diff).toContain("+++ b/firestore.indexes.json");
    expect(diff).toMatch(/^\+\s+\/\/ <retention:begin> written by `retention setup`/m);
    applyChanges(cwd, plan.changes);

    // The rules: exactly the example's generated rules, the team's lines around them untouched.
    expect(readFileSync(join(cwd, "firestore.rules"), "utf8")).toBe(readFileSync(join(REPO, "examples", "social", "firestore.rules"), "utf8"));
    // The indexes: the team's own entry first and unchanged, every registry query served, the TTL policy written.
    const indexes = indexJson(readFileSync(join(cwd, "firestore.indexes.json"), "utf8"));
    expect(indexes.indexes[0]).toEqual(APP_INDEX);
    expect(indexes.fieldOverrides).toContainEqual(expect.objectContaining({ collectionGroup: "notifications", fieldPath: "expireAt", ttl: true }));
    for (const q of registryQueries(new PolicyIndex(socialRegistry()).forCell("primary"))) expect(checkQuery(indexes as never, q.shape).status, q.why).not.toBe("missing");
    // The registry is the project's, in the kit's codebase where the instance's functions read it.
    expect((JSON.parse(readFileSync(join(cwd, "retention", "registries", "retention.json"), "utf8")) as { current: unknown }).current).toEqual(socialRegistry());
    // The second database: an entry in firebase.json's list, a rules file that holds the retention block (and denies what
    // it does not allow), and the indexes and TTL policies its part of the data map needs.
    const firebaseAfter = JSON.parse(readFileSync(join(cwd, "firebase.json"), "utf8")) as { firestore: unknown[] };
    expect(firebaseAfter.firestore).toContainEqual({ database: "analytics", rules: "firestore.analytics.rules", indexes: "firestore.analytics.indexes.json" });
    const analyticsRules = readFileSync(join(cwd, "firestore.analytics.rules"), "utf8");
    const block = generateRetentionRules(socialRegistry()).trimEnd().split("\n").map((l) => (l === "" ? l : `    ${l}`)).join("\n");
    expect(analyticsRules).toContain(block);
    expect(analyticsRules).toMatch(/^rules_version = '2';/);
    const analytics = new PolicyIndex(socialRegistry()).forCell("analytics");
    const analyticsIndexes = indexJson(readFileSync(join(cwd, "firestore.analytics.indexes.json"), "utf8"));
    expect(analytics.ttlCollections().length).toBeGreaterThan(0);
    for (const r of analytics.ttlCollections()) expect(analyticsIndexes.fieldOverrides, r.pattern).toContainEqual(expect.objectContaining({ collectionGroup: r.pattern.split("/").at(-2), fieldPath: "expireAt", ttl: true }));
    for (const q of registryQueries(analytics)) expect(checkQuery(analyticsIndexes as never, q.shape).status, q.why).not.toBe("missing");
    // The other database's files are not this instance's: untouched.
    for (const f of ["eu.rules", "eu.indexes.json"]) expect(readFileSync(join(cwd, f), "utf8"), f).toBe(before.get(f));

    // Idempotent.
    const again = planSetup({ cwd, policies: "policies" });
    expect(again.changes).toEqual([]);
  });

  it("leaves what the team changed outside the markers alone, and puts the block back when someone edited inside it", () => {
    project();
    applyChanges(cwd, planSetup({ cwd, policies: "policies" }).changes);
    const indexesFile = join(cwd, "firestore.indexes.json");
    const written = readFileSync(indexesFile, "utf8");
    // The team adds an index of its own above the block, and someone removes a line inside it.
    const own = { collectionGroup: "posts", queryScope: "COLLECTION", fields: [{ fieldPath: "authorId", order: "ASCENDING" }, { fieldPath: "createdAt", order: "DESCENDING" }] };
    const edited = written.replace('  "indexes": [\n', `  "indexes": [\n    ${JSON.stringify(own)},\n`);
    writeFileSync(indexesFile, edited);
    const plan = planSetup({ cwd, policies: "policies" });
    expect(plan.changes).toEqual([]);
    const tampered = edited.replace(/\n\s*"ttl": true,/, "");
    writeFileSync(indexesFile, tampered);
    const repair = planSetup({ cwd, policies: "policies" });
    expect(repair.changes.map((c) => c.file)).toEqual(["firestore.indexes.json"]);
    expect(repair.changes[0]!.after).toBe(edited);
  });

  it("two instances, each on its own database, each get their own database's files; two on one database are refused, nothing written", () => {
    project({ retention: {}, eu: { RETENTION_DATABASE_ID: "eu-shop", RETENTION_LEDGER_DATABASE_ID: "eu-ledger", RETENTION_DATABASES: "analytics=eu-analytics", RETENTION_STORAGE_BUCKET: "eu-uploads" } });
    const eu = planSetup({ cwd, policies: "policies", instance: "eu" });
    expect(eu.governedDatabase).toBe("eu-shop");
    expect(eu.changes.map((c) => c.file)).toEqual(expect.arrayContaining(["eu.rules", "eu.indexes.json", "retention/registries/eu.json", "firestore.eu-analytics.rules", "firestore.eu-analytics.indexes.json"]));
    expect(eu.changes.map((c) => c.file)).not.toContain("firestore.rules");
    expect(eu.commands).toContain("kit-eu-RETENTION_EVIDENCE_KEY");
    expect(eu.commands).toContain("--database=eu-ledger");
    expect(() => planSetup({ cwd, policies: "policies" })).toThrow(/Several instances of the kit: name one with --instance \(retention, eu\)/);

    rmSync(cwd, { recursive: true, force: true });
    mkdirSync(cwd);
    project({ retention: {}, eu: { RETENTION_LEDGER_DATABASE_ID: "eu-ledger", RETENTION_DATABASES: "analytics=eu-analytics", RETENTION_STORAGE_BUCKET: "eu-uploads" } });
    const before = snapshot();
    expect(() => planSetup({ cwd, policies: "policies", instance: "eu" })).toThrow(/instances retention and eu both govern database \(default\)/);
    expect(snapshot()).toEqual(before);

    // A bucket is the project's, not a database's: two instances whose data maps reach one bucket are refused too.
    rmSync(cwd, { recursive: true, force: true });
    mkdirSync(cwd);
    project({ retention: {}, eu: { RETENTION_DATABASE_ID: "eu-shop", RETENTION_LEDGER_DATABASE_ID: "eu-ledger", RETENTION_DATABASES: "analytics=eu-analytics" } });
    expect(new PolicyIndex(socialRegistry()).allStorageEntries().length).toBeGreaterThan(0);
    expect(() => planSetup({ cwd, policies: "policies", instance: "eu" })).toThrow(/instances retention and eu both reach Cloud Storage bucket demo-setup's default bucket/);

    // The registry's other databases count too: each instance maps them to databases of its own (RETENTION_DATABASES).
    rmSync(cwd, { recursive: true, force: true });
    mkdirSync(cwd);
    project({ retention: {}, eu: { RETENTION_DATABASE_ID: "eu-shop", RETENTION_LEDGER_DATABASE_ID: "eu-ledger", RETENTION_STORAGE_BUCKET: "eu-uploads" } });
    expect(new PolicyIndex(socialRegistry()).cells()).toContain("analytics");
    expect(() => planSetup({ cwd, policies: "policies", instance: "eu" })).toThrow(/instances retention and eu both govern database analytics/);
  });

  it("a firebase.json with one firestore object becomes a list when the registry's other database needs an entry; an entry without its indexes is refused", () => {
    project();
    const fjFile = join(cwd, "firebase.json");
    const fj = JSON.parse(readFileSync(fjFile, "utf8")) as Record<string, unknown>;
    writeFileSync(fjFile, `${JSON.stringify({ ...fj, firestore: { rules: "firestore.rules", indexes: "firestore.indexes.json" } }, null, 2)}\n`);
    applyChanges(cwd, planSetup({ cwd, policies: "policies" }).changes);
    expect((JSON.parse(readFileSync(fjFile, "utf8")) as { firestore: unknown }).firestore).toEqual([
      { database: "(default)", rules: "firestore.rules", indexes: "firestore.indexes.json" },
      { database: "analytics", rules: "firestore.analytics.rules", indexes: "firestore.analytics.indexes.json" },
    ]);
    expect(planSetup({ cwd, policies: "policies" }).changes).toEqual([]);

    writeFileSync(fjFile, `${JSON.stringify({ ...fj, firestore: [...(fj.firestore as unknown[]), { database: "analytics", rules: "a.rules" }] }, null, 2)}\n`);
    expect(() => planSetup({ cwd, policies: "policies" })).toThrow(/entry for database analytics \(the registry's analytics database\) lacks "indexes"/);
  });

  it("refuses a rules file without markers, and a project without the kit, and says what to do", () => {
    project();
    writeFileSync(join(cwd, "firestore.rules"), "rules_version = '2';\nservice cloud.firestore {\n  match /databases/{database}/documents {\n  }\n}\n");
    expect(() => planSetup({ cwd, policies: "policies" })).toThrow(SetupError);
    expect(() => planSetup({ cwd, policies: "policies" })).toThrow(/no retention markers/);
    rmSync(join(cwd, "retention", "package.json"));
    expect(() => planSetup({ cwd, policies: "policies" })).toThrow(/installs no firestore-retention kit/);
  });

  it("publish: appends the new version's hash after the checks pass; a published version is never published again", () => {
    project();
    const current = JSON.parse(readFileSync(join(cwd, "policies", "versions", `${CURRENT}.json`), "utf8")) as Record<string, unknown>;
    writeFileSync(join(cwd, "policies", "versions", `${NEXT}.json`), JSON.stringify({ ...current, version: NEXT }, null, 2));
    const { version, change } = planPublish(cwd, "policies", `${NEXT}.json`);
    expect(version).toBe(NEXT);
    applyChanges(cwd, [change]);
    expect(planSetup({ cwd, policies: "policies" }).registryVersion).toBe(NEXT);
    expect(() => planPublish(cwd, "policies", `${NEXT}.json`)).toThrow(/already published/);
    expect(() => planPublish(cwd, "policies", "v9.json")).toThrow(/does not exist/);
  });
});

describe("the index file's retention block", () => {
  const policy = new PolicyIndex(socialRegistry());

  it("on a file without markers: appended to each array, with a comma after the app's last entry; then stable", () => {
    const text = `${JSON.stringify({ indexes: [APP_INDEX], fieldOverrides: [{ collectionGroup: "posts", fieldPath: "tags", indexes: [{ arrayConfig: "CONTAINS", queryScope: "COLLECTION" }] }] }, null, 2)}\n`;
    const { after } = spliceIndexFile(text, policy, "firestore.indexes.json");
    const parsed = indexJson(after);
    expect(parsed.indexes[0]).toEqual(APP_INDEX);
    expect(parsed.fieldOverrides[0]).toEqual({ collectionGroup: "posts", fieldPath: "tags", indexes: [{ arrayConfig: "CONTAINS", queryScope: "COLLECTION" }] });
    expect(after.match(/<retention:begin>/g)).toHaveLength(2);
    expect(spliceIndexFile(after, policy, "firestore.indexes.json").after).toBe(after);
  });

  it("a file without the arrays gets them", () => {
    const { after } = spliceIndexFile("{}\n", policy, "x.json");
    const parsed = indexJson(after);
    expect(parsed.indexes.length).toBeGreaterThan(0);
    expect(parsed.fieldOverrides.length).toBeGreaterThan(0);
  });

  it("refuses, changing nothing: bad JSON, doubled markers, app entries after the block, an app override that lacks what the registry needs", () => {
    expect(() => spliceIndexFile("{ not json", policy, "x.json")).toThrow(IndexFileError);
    const once = spliceIndexFile(`${JSON.stringify({ indexes: [], fieldOverrides: [] })}\n`, policy, "x.json").after;
    const doubled = once.replace(/(\s*)\/\/ <retention:end>/, "$1// <retention:end>$1// <retention:end>");
    expect(() => spliceIndexFile(doubled, policy, "x.json")).toThrow(/exactly one/);
    const endLine = once.indexOf("\n", once.indexOf("// <retention:end>"));
    const after = `${once.slice(0, endLine)}\n  , ${JSON.stringify(APP_INDEX)}${once.slice(endLine)}`;
    expect(() => spliceIndexFile(after, policy, "x.json")).toThrow(/entries after/);
    // The team switched the TTL field's indexing off without the TTL policy: the registry needs the policy.
    const conflicting = JSON.stringify({ indexes: [], fieldOverrides: [{ collectionGroup: "notifications", fieldPath: "expireAt", indexes: [] }] });
    expect(() => spliceIndexFile(conflicting, policy, "x.json")).toThrow(/notifications\.expireAt must say "ttl": true/);
  });
});

describe("instances that would share data", () => {
  it("two instances on one database, or a ledger on a governed database, are each named", () => {
    expect(databaseCollisions([{ instance: "a", governed: ["(default)"], ledger: "ledger-a" }, { instance: "b", governed: ["eu"], ledger: "ledger-b" }])).toEqual([]);
    expect(databaseCollisions([{ instance: "a", governed: ["(default)"], ledger: "l" }, { instance: "b", governed: ["(default)"], ledger: "l2" }])).toEqual([expect.stringMatching(/instances a and b both govern database \(default\)/)]);
    expect(databaseCollisions([{ instance: "a", governed: ["(default)"], ledger: "eu" }, { instance: "b", governed: ["eu"], ledger: "l2" }])).toEqual([expect.stringMatching(/instance a's erasure ledger is eu, which instance b governs/)]);
  });

  it("two instances whose data maps reach one bucket are named", () => {
    expect(bucketCollisions([{ instance: "a", buckets: ["x"] }, { instance: "b", buckets: ["y"] }])).toEqual([]);
    expect(bucketCollisions([{ instance: "a", buckets: ["x", "x"] }, { instance: "b", buckets: ["y", "x"] }])).toEqual([expect.stringMatching(/instances a and b both reach Cloud Storage bucket x/)]);
  });

  it("setEnvLine replaces a key's line or appends it, keeping every other line", () => {
    expect(setEnvLine("A=1\n# note\nB=2\n", "B", "3")).toBe("A=1\n# note\nB=3\n");
    expect(setEnvLine("A=1", "C", "x y")).toBe('A=1\nC="x y"\n');
  });
});
