/**
 * The function kit's entry and what it declares (functions/src/kit/, config/params.ts, platform/function-ids.ts),
 * without loading it: the entry exports exactly the listed functions, the same ones as the project's own list; every
 * id fits `kit-<instance>-<name>`; every param has a label and a check that agrees with the runtime reader; task
 * queues are the instance's own.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { intPattern, paramOptions, SETTINGS, type SettingKey } from "../../../functions/src/config/params";
import { PolicyIndex } from "../../../functions/src/kernel/policy";
import { idsTooLong, KIT_FUNCTIONS, kitFunctionNames } from "../../../functions/src/kit/functions";
import { KIT_ROLES } from "../../../functions/src/kit/roles";
import { functionId, kitInstance, MAX_FUNCTION_ID_LENGTH } from "../../../functions/src/platform/function-ids";
import { socialRegistry } from "../../../examples/social/registry";

const SRC = join(__dirname, "..", "..", "..", "functions", "src");

/** The names a module's `export { a as b } from` / `export { a } from` lines export. */
function exportedNames(file: string): string[] {
  const text = readFileSync(join(SRC, file), "utf8");
  return [...text.matchAll(/^export \{ (\w+)(?: as (\w+))? \} from/gm)].map((m) => m[2] ?? m[1]!);
}

describe("the kit's functions", () => {
  it("the entry (kit/index.ts) exports exactly KIT_FUNCTIONS, plus the TTL trigger group", () => {
    expect(exportedNames("kit/index.ts").sort()).toEqual([...KIT_FUNCTIONS, "ttlDeleted"].sort());
  });

  it("are the project's own functions (index.ts), under the same names", () => {
    expect(exportedNames("kit/index.ts").sort()).toEqual(exportedNames("index.ts").sort());
  });

  it("the kit's Auth backstop is the 2nd-gen one (firebase-tools refuses a kit with a 1st-gen function)", () => {
    expect(readFileSync(join(SRC, "kit", "index.ts"), "utf8")).toMatch(/onUserDeletedBackstop as onAuthUserDeleted\b.*on-user-deleted"/);
    expect(readFileSync(join(SRC, "entrypoints", "auth", "on-user-deleted.ts"), "utf8")).toContain('from "firebase-functions/v2/identity"');
  });

  it("every id fits Cloud Functions' 63 characters under an instance id of up to 36 characters; a longer one is named with the ids it breaks", () => {
    const names = kitFunctionNames(new PolicyIndex(socialRegistry()));
    expect(names).toContain("ttlDeleted-notifications");
    const longestFixed = Math.max(...KIT_FUNCTIONS.map((n) => n.length));
    expect(longestFixed).toBe(22);
    expect(idsTooLong("a".repeat(36), KIT_FUNCTIONS)).toEqual([]);
    const over = idsTooLong("a".repeat(37), KIT_FUNCTIONS);
    expect(over.map((o) => o.length)).toEqual(over.map(() => MAX_FUNCTION_ID_LENGTH + 1));
    expect(over.length).toBeGreaterThan(0);
    // A TTL trigger's id grows with its collection's name: an instance id that fits the fixed ones may not fit it.
    expect(idsTooLong("retention", names)).toEqual([]);
    expect(idsTooLong("a".repeat(35), names).map((o) => o.id)).toEqual([`kit-${"a".repeat(35)}-ttlDeleted-notifications`]);
  });

  it("each instance enqueues on its own task queues: kit-<instance>-<name> in a kit, the bare name outside one", () => {
    expect(functionId("purgeChunk", {})).toBe("purgeChunk");
    expect(kitInstance({})).toBeNull();
    expect(functionId("purgeChunk", { FIREBASE_KIT_INSTANCE_ID: "eu" })).toBe("kit-eu-purgeChunk");
    expect(functionId("purgeChunk", { FIREBASE_KIT_INSTANCE_ID: "us" })).not.toBe(functionId("purgeChunk", { FIREBASE_KIT_INSTANCE_ID: "eu" }));
    // Every enqueue goes through functionId: no queue is named by a bare string, wherever a queue is opened.
    const opening = readdirSync(SRC, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts") && readFileSync(join(SRC, f), "utf8").includes("taskQueue"));
    expect(opening).toContain(join("platform", "tasks.ts"));
    for (const file of opening) {
      const text = readFileSync(join(SRC, file), "utf8");
      expect(text, file).not.toMatch(/taskQueue(<[^>]+>)?\((?!functionId\()/);
    }
    // The wings queue through platform/tasks.ts#enqueueOnce, which does.
    for (const file of ["holds/tasks.ts", "purge/runner/tasks.ts", "processors/sweep.ts", "access/tasks.ts"]) {
      const text = readFileSync(join(SRC, file), "utf8");
      expect(text, file).not.toContain("taskQueue");
      expect(text, file).toMatch(/enqueueOnce(<[^>]+>)?\("/);
    }
  });

  it("declares each role once, with why it is needed", () => {
    const roles = KIT_ROLES.map((r) => r.role);
    expect(new Set(roles).size).toBe(roles.length);
    for (const r of KIT_ROLES) {
      expect(r.role).toMatch(/^roles\/[a-zA-Z.]+$/);
      expect(r.why.length).toBeGreaterThan(10);
    }
  });
});

describe("the kit's params", () => {
  const keys = Object.keys(SETTINGS) as SettingKey[];

  it("every setting has a label, a description and a default; every int and every patterned string a check", () => {
    for (const key of keys) {
      const o = paramOptions(key);
      expect(o.label, key).not.toBe("");
      expect(o.description, key).toBe(SETTINGS[key].description);
      expect(o.default, key).toBe(SETTINGS[key].default);
      if (SETTINGS[key].kind === "int") expect(o.input?.text.validationRegex, key).toBeDefined();
    }
  });

  it("an int's check accepts exactly what its bounds allow, and its default", () => {
    for (const key of keys) {
      const s = SETTINGS[key] as { kind: string; min?: number; max?: number; default: unknown };
      if (s.kind !== "int") continue;
      const re = new RegExp(paramOptions(key).input!.text.validationRegex);
      const min = s.min ?? 0;
      expect(re.test(String(s.default)), `${key} default`).toBe(true);
      expect(re.test(String(min)), `${key} min`).toBe(true);
      if (min > 0) expect(re.test(String(min - 1)), `${key} below min`).toBe(false);
      if (s.max !== undefined) {
        expect(re.test(String(s.max)), `${key} max`).toBe(true);
        expect(re.test(String(s.max + 1)), `${key} above max`).toBe(false);
      } else {
        expect(re.test(String(min * 1000 + 7)), `${key} large`).toBe(true);
      }
      expect(re.test("-1"), key).toBe(false);
      expect(re.test("1.5"), key).toBe(false);
      expect(re.test(""), key).toBe(false);
    }
  });

  it("intPattern: ranges without a ceiling take any larger integer and no leading zero", () => {
    const re = intPattern(5);
    for (const [v, ok] of [["5", true], ["9", true], ["10", true], ["123456", true], ["4", false], ["05", false], ["0", false]] as const) expect(re.test(v), v).toBe(ok);
    const bounded = intPattern(1, 300);
    for (const [v, ok] of [["1", true], ["300", true], ["301", false], ["0", false]] as const) expect(bounded.test(v), v).toBe(ok);
  });

  it("a string's check accepts its default (database ids, schedules, the time zone)", () => {
    for (const key of keys) {
      const check = paramOptions(key).input?.text.validationRegex;
      if (SETTINGS[key].kind !== "string" || check === undefined) continue;
      expect(new RegExp(check).test(String(SETTINGS[key].default)), key).toBe(true);
    }
    const db = new RegExp(paramOptions("databaseId").input!.text.validationRegex);
    for (const [v, ok] of [["(default)", true], ["eu-shop", true], ["EU", false], ["a", false], ["-x-db", false]] as const) expect(db.test(v), v).toBe(ok);
  });
});
