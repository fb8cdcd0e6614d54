/**
 * The kit's npm-shrinkwrap.json, cut from the repository's lockfile (scripts/kit-lockfile.mjs): only what the kit's
 * dependencies reach, each at the version the tests ran, re-rooted at the workspace, with flags recomputed.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { registryTarball, resolveFrom, subsetLockfile, type Lockfile } from "../../../scripts/kit-lockfile.mjs";

const lock: Lockfile = {
  lockfileVersion: 3,
  packages: {
    "": { name: "root" },
    functions: { version: "0.1.0" },
    "node_modules/ws": { version: "functions", link: true, resolved: "functions" },
    "node_modules/a": { version: "1.0.0", integrity: "sha512-a", dependencies: { b: "^2" }, dev: true },
    "node_modules/b": { version: "2.0.0", integrity: "sha512-b", optionalDependencies: { c: "^1" }, peerDependencies: { p: "^1" } },
    "node_modules/c": { version: "1.0.0", integrity: "sha512-c", optional: true },
    "node_modules/p": { version: "1.2.0", integrity: "sha512-p" },
    "functions/node_modules/a": { version: "3.0.0", integrity: "sha512-a3", dependencies: { b: "^2" } },
    "node_modules/unrelated": { version: "9.9.9", integrity: "sha512-u" },
    "node_modules/@scope/x": { version: "0.1.0", integrity: "sha512-x" },
  },
};

describe("kit-lockfile", () => {
  it("resolves a name as npm does: the package's own node_modules first, then each ancestor's", () => {
    expect(resolveFrom(lock.packages, "functions", "a")).toBe("functions/node_modules/a");
    expect(resolveFrom(lock.packages, "functions", "b")).toBe("node_modules/b");
    expect(resolveFrom(lock.packages, "", "a")).toBe("node_modules/a");
    expect(resolveFrom(lock.packages, "functions", "nope")).toBeNull();
  });

  it("keeps what the dependencies reach, at the workspace's versions, re-rooted; optional and peer flags recomputed; no dev", () => {
    const out = subsetLockfile(lock, { from: "functions", root: { name: "kit", version: "1.0.0", dependencies: { a: "3.0.0", "@scope/x": "0.1.0" } } });
    expect(Object.keys(out.packages)).toEqual(["", "node_modules/@scope/x", "node_modules/a", "node_modules/b", "node_modules/c", "node_modules/p"]);
    expect(out.packages["node_modules/a"]).toMatchObject({ version: "3.0.0", integrity: "sha512-a3" });
    expect(out.packages["node_modules/a"]!.dev).toBeUndefined();
    expect(out.packages["node_modules/c"]!.optional).toBe(true);
    expect(out.packages["node_modules/p"]!.peer).toBe(true);
    expect(out.packages["node_modules/b"]!.optional).toBeUndefined();
    // Tarball URLs named, so that npm takes each from its cache by integrity, offline.
    expect(out.packages["node_modules/@scope/x"]!.resolved).toBe("https://registry.npmjs.org/@scope/x/-/x-0.1.0.tgz");
    expect(registryTarball("node_modules/a", "3.0.0")).toBe("https://registry.npmjs.org/a/-/a-3.0.0.tgz");
  });

  it("refuses a dependency the lockfile lacks", () => {
    expect(() => subsetLockfile(lock, { from: "functions", root: { name: "kit", version: "1.0.0", dependencies: { missing: "1" } } })).toThrow(/missing .* is not in the lockfile/);
  });

  it("the repository's own: every dependency of functions/ is in the kit's tree at the version functions/ resolves it to", () => {
    const repo = join(__dirname, "..", "..", "..");
    const rootLock = JSON.parse(readFileSync(join(repo, "package-lock.json"), "utf8")) as Lockfile;
    const { dependencies } = JSON.parse(readFileSync(join(repo, "functions", "package.json"), "utf8")) as { dependencies: Record<string, string> };
    const out = subsetLockfile(rootLock, { from: "functions", root: { name: "kit", version: "0.0.0", dependencies } });
    for (const [name, version] of Object.entries(dependencies)) expect(out.packages[`node_modules/${name}`]?.version, name).toBe(version);
    for (const [path, entry] of Object.entries(out.packages)) if (path !== "") expect(entry.dev, path).toBeUndefined();
  });
});
