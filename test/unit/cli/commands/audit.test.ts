import { afterEach, describe, expect, it, vi } from "vitest";
import { subjectFrom, userFrom } from "../../../../functions/src/cli/commands/plan";
import { summaryFailed } from "../../../../functions/src/cli/commands/run";
import { keyValues, progressLine, table } from "../../../../functions/src/cli/output";
import { mainHelp, runCli } from "../../../../functions/src/cli/run";
import { UsageError } from "../../../../functions/src/cli/target";

describe("retention CLI pieces", () => {
  afterEach(() => vi.restoreAllMocks());

  it("tables pad every column but the last", () => {
    expect(table(["CODE", "PATH"], [["MISSING_TTL", "events/e-1"], ["X", "a"]])).toBe(
      ["CODE         PATH", "-----------  ----------", "MISSING_TTL  events/e-1", "X            a"].join("\n"),
    );
    expect(keyValues([["a", 1], ["long key", null]])).toBe("a         1\nlong key  -");
  });

  it("plan subjects: a user needs its tenant; ids are checked", () => {
    expect(subjectFrom("u-1", "t-1")).toEqual({ type: "user", uid: "u-1", tenantId: "t-1" });
    expect(subjectFrom(undefined, "t-1")).toEqual({ type: "tenant", tenantId: "t-1" });
    expect(() => subjectFrom("u-1", undefined)).toThrow(UsageError);
    expect(() => subjectFrom("u/1", "t-1")).toThrow(UsageError);
    // A uid alone: its scope is found at run time by the registry's lookups (none in an app without scopes).
    expect(userFrom("u-1")).toBe("u-1");
    expect(() => userFrom("u/1")).toThrow(UsageError);
  });

  it("a job summary fails on ok:false or findings > 0", () => {
    const base = { job: "retentionAudit" as const, dryRun: false, asOf: null };
    expect(summaryFailed({ ...base, ok: true, findings: 0 })).toBe(false);
    expect(summaryFailed({ ...base, findings: 2 })).toBe(true);
    expect(summaryFailed({ ...base, ok: false })).toBe(true);
    expect(summaryFailed({ ...base, deleted: 10 })).toBe(false);
  });

  it("progress is drawn on stderr only when enabled (a terminal), as one redrawn line", () => {
    const err = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    const off = progressLine(false);
    off.update("x");
    off.done();
    expect(err).not.toHaveBeenCalled();
    const on = progressLine(true);
    on.update("auditing sessions: 500 documents");
    on.done();
    expect(err.mock.calls.map(([c]) => String(c))).toEqual(["\r\x1b[Kauditing sessions: 500 documents", "\r\x1b[K"]);
  });

  it("usage: help exits 0, no command or an unknown one exits 2, all before any connection", async () => {
    const out = vi.spyOn(process.stdout, "write").mockImplementation(() => true);
    const err = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    expect(await runCli(["--help"])).toBe(0);
    expect(String(out.mock.calls[0]?.[0])).toBe(`${mainHelp()}\n`);
    expect(await runCli(["help", "verify-evidence"])).toBe(0);
    expect(String(out.mock.calls[1]?.[0])).toMatch(/^Usage: retention verify-evidence/);
    expect(await runCli([])).toBe(2);
    expect(await runCli(["nope"])).toBe(2);
    expect(await runCli(["audit", "--page-size"])).toBe(2);
    expect(err.mock.calls.map(([c]) => String(c)).join("")).toContain('unknown command "nope"');
  });
});
