// RETENTION_DATABASES: a governed database's physical id by its logical name (platform/settings.ts), and the ids
// the tasks and the erasure ledger give a database's own work.
import { afterEach, describe, expect, it } from "vitest";
import { ledgerEntryId } from "../../../functions/src/erasure/rules";
import { parseDatabaseMap, settings } from "../../../functions/src/platform/settings";
import { chunkTaskId, requestTaskId } from "../../../functions/src/purge/runner/tasks";

const saved = { db: process.env.RETENTION_DATABASE_ID, dbs: process.env.RETENTION_DATABASES };
afterEach(() => {
  for (const [k, v] of [
    ["RETENTION_DATABASE_ID", saved.db],
    ["RETENTION_DATABASES", saved.dbs],
  ] as const) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

describe("RETENTION_DATABASES", () => {
  it("maps logical names to physical ids; a name it does not map is its own id; the primary is RETENTION_DATABASE_ID", () => {
    process.env.RETENTION_DATABASE_ID = "app-prod";
    process.env.RETENTION_DATABASES = "analytics=analytics-prod, billing=(default)";
    expect(settings.cellDatabaseId("primary")).toBe("app-prod");
    expect(settings.cellDatabaseId("analytics")).toBe("analytics-prod");
    expect(settings.cellDatabaseId("billing")).toBe("(default)");
    expect(settings.cellDatabaseId("metrics")).toBe("metrics");
    delete process.env.RETENTION_DATABASES;
    expect(settings.cellDatabaseId("analytics")).toBe("analytics");
  });

  it("fails loudly on a malformed or repeated entry: a database must never fall back to the wrong one", () => {
    expect(parseDatabaseMap("")).toEqual(new Map());
    expect(() => parseDatabaseMap("analytics")).toThrow(/is not <logical-name>=<database-id>/);
    expect(() => parseDatabaseMap("Analytics=x")).toThrow(/is not <logical-name>=<database-id>/);
    expect(() => parseDatabaseMap("a=x,a=y")).toThrow(/names a twice/);
  });
});

describe("ids of a database's own work", () => {
  it("the primary's task and ledger ids are as they always were; another database's carry its name", () => {
    const request = { requestId: "r-1", runKey: "k-1" };
    expect(requestTaskId(request)).toBe(requestTaskId({ ...request, database: "primary" }));
    expect(requestTaskId({ ...request, database: "analytics" })).not.toBe(requestTaskId(request));
    const chunk = { unitKey: "r-1", round: 1, generation: 1, start: 0 };
    expect(chunkTaskId({ ...chunk, database: "analytics" })).not.toBe(chunkTaskId(chunk));
    expect(ledgerEntryId("r-1")).toBe("r-1");
    expect(ledgerEntryId("r-1", "primary")).toBe("r-1");
    expect(ledgerEntryId("r-1", "analytics")).toBe("r-1@analytics");
    expect(() => ledgerEntryId("r-1", "Bad/Name")).toThrow(/LEDGER_BAD_DATABASE/);
  });
});
