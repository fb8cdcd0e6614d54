/**
 * The query recorder behind the index coverage check (scripts/index-check/recorder.cjs), against the emulator:
 * a query the product's code sends is recorded with the code that issued it (a plain get, a count(), a query read
 * inside a transaction after another read), with its scope, filters and orders; a query the test sends itself is
 * recorded as the test's, which the check leaves out.
 */
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { activeHolds, activeHoldsCoveringInTx } from "../../../functions/src/holds/service";
import { classSizes } from "../../../functions/src/purge/runner/run-budget";
import { issuerOf, type LogRecord, type QueryRecord } from "../../../scripts/index-check/report";
import { clearFirestore, db } from "../../helpers/emulator";
import { repoRoot } from "../../helpers/policy";

const DATABASE = "index-check-tests";
const previousDatabase = process.env.RETENTION_DATABASE_ID;
const THIS_FILE = "test/integration/scripts/index-check-recorder.test.ts";

/** The folder this process records into: the harness's (`--record-queries`), or one of our own when it is off. */
function logDir(): string {
  const fromHarness = process.env.RETENTION_QUERY_LOG;
  if (fromHarness) return fromHarness;
  const dir = mkdtempSync(join(tmpdir(), "query-log-"));
  const recorder = createRequire(import.meta.url)("../../../scripts/index-check/recorder.cjs") as {
    install(options: { functionsDir: string; dir: string; processKind: string }): void;
  };
  recorder.install({ functionsDir: join(repoRoot, "functions"), dir, processKind: "vitest" });
  return dir;
}

let dir = "";
function recorded(): QueryRecord[] {
  const file = readdirSync(dir).find((f) => f === `vitest-${process.pid}.jsonl`);
  if (!file) throw new Error(`no log of this process in ${dir}`);
  return readFileSync(join(dir, file), "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as LogRecord)
    .filter((r): r is QueryRecord => r.kind === "query" && r.database === DATABASE);
}
const calledFromHere = (r: QueryRecord) => (r.site?.via ?? []).some((v) => v.startsWith(THIS_FILE)) || r.site?.file === THIS_FILE;

describe("query recorder", () => {
  beforeAll(async () => {
    process.env.RETENTION_DATABASE_ID = DATABASE;
    dir = logDir();
    await clearFirestore(DATABASE);
  });
  afterAll(() => {
    if (previousDatabase === undefined) delete process.env.RETENTION_DATABASE_ID;
    else process.env.RETENTION_DATABASE_ID = previousDatabase;
  });

  it("records a product query with its shape and the function that issued it", async () => {
    await activeHolds();
    const r = recorded().find((x) => x.site?.fn === "activeHolds" && calledFromHere(x));
    expect(r).toMatchObject({
      process: "vitest",
      scope: "collection",
      collectionId: "retentionHolds",
      where: { field: "state", op: "EQUAL" },
      orderBy: [{ field: "__name__", direction: "ASCENDING" }],
      aggregations: [],
      site: { file: "functions/src/holds/service.ts" },
    });
    expect(issuerOf(r!.site)).toBe("functions");
  });

  it("records count() aggregations as aggregations of the same query", async () => {
    await classSizes(["event-90d"]);
    // The counts run in parallel (each inside an arrow of classSizes), so the site is known by its file.
    const r = recorded().find((x) => x.site?.file === "functions/src/purge/runner/run-budget.ts" && x.collectionId === "events");
    expect(r).toMatchObject({ scope: "collection", where: null, aggregations: ["count"], site: { file: "functions/src/purge/runner/run-budget.ts" } });
  });

  it("records a query read inside a transaction, also after the transaction's first read", async () => {
    await db().runTransaction(async (tx) => {
      await tx.get(db().doc("tenants/t-index-check"));
      return activeHoldsCoveringInTx(tx, "tenants/t-index-check/orders/o1");
    });
    const r = recorded().find((x) => x.site?.fn === "activeHoldsCoveringInTx" && calledFromHere(x));
    expect(r).toMatchObject({
      collectionId: "retentionHolds",
      where: { op: "AND", filters: [{ field: "state", op: "EQUAL" }, { field: "targetPath", op: "IN" }] },
      site: { file: "functions/src/holds/service.ts" },
    });
  });

  it("records a query the test sends itself as the test's, which the check leaves out", async () => {
    const collectionId = `probe${Date.now()}`;
    await db().collectionGroup(collectionId).where("marker", ">", 1).orderBy("marker", "desc").get();
    const r = recorded().find((x) => x.collectionId === collectionId);
    expect(r).toMatchObject({
      scope: "collection-group",
      where: { field: "marker", op: "GREATER_THAN" },
      orderBy: [{ field: "marker", direction: "DESCENDING" }],
      site: { file: THIS_FILE },
    });
    expect(issuerOf(r!.site)).toBe("test");
  });

  it("records a query listener's target as a query", async () => {
    const collectionId = `listened${Date.now()}`;
    await new Promise<void>((resolve, reject) => {
      const stop = db()
        .collection(collectionId)
        .where("state", "==", "ACTIVE")
        .onSnapshot(
          () => {
            stop();
            resolve();
          },
          reject,
        );
    });
    expect(recorded().find((x) => x.collectionId === collectionId)).toMatchObject({
      listen: true,
      scope: "collection",
      where: { field: "state", op: "EQUAL" },
      site: { file: THIS_FILE },
    });
  });
});
