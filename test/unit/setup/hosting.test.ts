/**
 * The console reaches the callables only through the Hosting rewrites `/api/<name>`: a call the rewrites do not route
 * falls through to the single-page fallback and answers HTML, which the client cannot read. This project's own
 * firebase.json must be what `consoleHosting` writes for a kit instance, and the rewrites must cover every callable the
 * console's code calls.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CONSOLE_CALLABLES, consoleHosting } from "../../../functions/src/setup/rules/hosting";
import { repoRoot } from "../../helpers/policy";

const sources = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(join(dir, e.name)) : /\.tsx?$/.test(e.name) ? [join(dir, e.name)] : []));

describe("the console's Hosting rewrites", () => {
  it("this project's firebase.json hosting is consoleHosting for its own functions", () => {
    const firebaseJson = JSON.parse(readFileSync(join(repoRoot, "firebase.json"), "utf8")) as { hosting: unknown };
    expect(firebaseJson.hosting).toEqual(consoleHosting({ public: "console/dist", functionIdPrefix: "", region: "us-central1" }));
  });

  it("route every callable the console calls", () => {
    const called = new Set(sources(join(repoRoot, "console", "src")).flatMap((f) => [...readFileSync(f, "utf8").matchAll(/\bclient\.([A-Za-z]+)\(/g)].map((m) => m[1]!)));
    expect(called.size).toBeGreaterThan(5);
    expect([...called].filter((name) => !(CONSOLE_CALLABLES as readonly string[]).includes(name)).sort()).toEqual([]);
  });
});
