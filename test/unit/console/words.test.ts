/**
 * The console reads as plain words: refusals as sentences with their code as a detail, one time format, people by
 * name, where a request stands, and paths that wrap only at their slashes.
 */
import { FunctionsError } from "firebase/functions";
import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { brakeWhy, describeProblem, humanTimes, namePeople, openedBy, PathText, personName, problem, timelineText, whereItStands } from "../../../console/src/format";
import { REQUEST_STATES } from "../../../functions/src/kernel/request-states";

const refusal = (reason: string, message: string) => new FunctionsError("failed-precondition", message, { reason });

describe("the console's words", () => {
  it("a refusal reads as a sentence, with its code as a detail; an unknown code keeps the server's sentence", () => {
    expect(describeProblem(refusal("NOT_GOVERNED_PATH", "No retention class governs this collection."))).toEqual({
      text: "No retention policy covers this collection, so there is nothing a hold could protect here.",
      code: "NOT_GOVERNED_PATH",
    });
    expect(problem(refusal("TARGET_NOT_FOUND", "No document at targetPath. [404]"))).toBe("There is no document at this path. Check its collection names and ids. (code TARGET_NOT_FOUND)");
    expect(describeProblem(refusal("SOMETHING_NEW", "A new refusal. [409]"))).toEqual({ text: "A new refusal.", code: "SOMETHING_NEW" });
    expect(describeProblem(new Error("network down"))).toEqual({ text: "network down", code: null });
  });

  it("every ISO time in a sentence is written as the tables write times", () => {
    expect(humanTimes("2026-12-01T16:13:05.123Z PURGE_BATCH by the system, until 2027-01-05T02:00:00Z")).toBe("2026-12-01 16:13 UTC PURGE_BATCH by the system, until 2027-01-05 02:00 UTC");
  });

  it("staff by name, else email, else the uid; a sentence's uids become names, whole uids only", () => {
    const people = { "r-3001": { name: "Rita (retention-admin)", email: "rita.admin@atlasmart.test" }, "c-2002": { name: null, email: "dev@atlasmart.test" } };
    expect(personName(people, "r-3001")).toBe("Rita (retention-admin)");
    expect(personName(people, "c-2002")).toBe("dev@atlasmart.test");
    expect(personName(people, "u-1001")).toBe("u-1001");
    expect(namePeople("approved by r-3001, not xr-30011 or r-3001x", people)).toBe("approved by Rita (retention-admin), not xr-30011 or r-3001x");
    expect(openedBy("staff", "r-3001", people)).toBe("Rita (retention-admin) (staff)");
    expect(openedBy("user", "u-1001", people)).toBe("the person themselves, in the app");
  });

  it("says where every request state stands; a PENDING request waits out its grace until a date, then is due", () => {
    const nowMs = Date.parse("2026-12-01T12:00:00Z");
    const base = { graceEndsAt: "2026-12-08T12:00:00.000Z", blockedReason: null, retainedUnderHold: null };
    for (const state of REQUEST_STATES) expect(whereItStands({ ...base, state }, nowMs)).not.toBe("-");
    expect(whereItStands({ ...base, state: "PENDING" }, nowMs)).toBe("Waiting out its grace period until 2026-12-08 12:00 UTC: it can still be cancelled");
    expect(whereItStands({ ...base, state: "PENDING", graceEndsAt: "2026-11-30T12:00:00.000Z" }, nowMs)).toBe("Grace period over: the next nightly run erases it");
    expect(timelineText("SOFT_DELETED", "source user")).toEqual({ event: "Soft deleted", detail: "asked for by the person themselves, in the app" });
  });

  it("a path wraps only after its slashes, never inside a segment", () => {
    expect(renderToStaticMarkup(createElement(PathText, { path: "tenants/t-acme/orders/o-1002" }))).toBe('<code class="path"><span class="seg">tenants/</span><wbr/><span class="seg">t-acme/</span><wbr/><span class="seg">orders/</span><wbr/><span class="seg">o-1002</span></code>');
  });
});

describe("the brake's reason, in words", () => {
  it("says how much of a class, or of a run's limit, a held-back run would delete", () => {
    expect(brakeWhy({ kind: "CLASS_SHARE", retentionClass: "event-90d", count: 60, classSize: 62, limit: 0.5 })).toBe("it would delete 60 of the 62 documents of class event-90d, more than 50% of the class at once");
    expect(brakeWhy({ kind: "TOTAL", retentionClass: null, count: 120_000, classSize: null, limit: 100_000 })).toBe("it would delete 120000 documents, more than the 100000 one run may delete");
    expect(brakeWhy({ kind: "NEW_KIND" })).toBe("NEW_KIND");
  });
});
