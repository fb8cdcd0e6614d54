/**
 * Which registry the functions enforce: the bundle file RETENTION_REGISTRY_FILE names (from the environment, or
 * from the functions' dotenv files for the project, which firebase-tools does not pass while it lists the
 * functions), else the built-in one; a bundle is checked before anything is enforced from it.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { socialLock, socialPublished, socialRegistry } from "../../../examples/social/registry";
import { retentionFingerprints } from "../../../functions/src/kernel/policy-fingerprint";
import { parseRegistryBundle } from "../../../functions/src/kernel/registry-bundle";
import { CODEBASE_DIR, policy, publishedVersions, readRegistryBundle, registryFileSetting, registrySource, useRegistryForTests } from "../../../functions/src/platform/registry";
import builtIn from "../../../functions/src/generated/registry.json";

/** The social example's bundle, as `bundle-policies --policies examples/social/policies --out` writes it. */
const socialBundle = () => ({
  current: socialRegistry(),
  published: socialLock().map((l, i) => ({ version: l.version, sha256: l.sha256, retention: retentionFingerprints(socialPublished()[i]!) })),
});

const dir = () => mkdtempSync(join(tmpdir(), "registry-"));

afterEach(() => {
  vi.unstubAllEnvs();
  useRegistryForTests(undefined);
});

describe("the registry the functions enforce", () => {
  it("is named by the environment first, else by the codebase's dotenv files for the project, a later file winning", () => {
    const d = dir();
    writeFileSync(join(d, ".env"), "RETENTION_REGISTRY_FILE=registries/base.json\n");
    writeFileSync(join(d, ".env.demo-social"), "# the social example\nRETENTION_REGISTRY_FILE=registries/social.json\n");
    writeFileSync(join(d, ".env.local"), "RETENTION_DATABASE_ID=(default)\n");
    expect(registryFileSetting({}, d, "demo-social")).toBe("registries/social.json");
    expect(registryFileSetting({}, d, "demo-other")).toBe("registries/base.json");
    expect(registryFileSetting({ RETENTION_REGISTRY_FILE: "/abs/x.json" }, d, "demo-social")).toBe("/abs/x.json");
    // An explicit empty value in the environment means the built-in registry, whatever the files say.
    expect(registryFileSetting({ RETENTION_REGISTRY_FILE: "" }, d, "demo-social")).toBe("");
    // .env.local counts only on the emulators, as firebase-tools reads it only there.
    writeFileSync(join(d, ".env.local"), 'RETENTION_REGISTRY_FILE="registries/local.json"\n');
    expect(registryFileSetting({}, d, "demo-social")).toBe("registries/social.json");
    expect(registryFileSetting({ FUNCTIONS_EMULATOR: "true" }, d, "demo-social")).toBe("registries/local.json");
    expect(registryFileSetting({}, dir(), "demo-social")).toBe("");
  });

  it("the repository's own files: the social example's project names its bundle, AtlasMart's none", () => {
    expect(registryFileSetting({}, CODEBASE_DIR, "demo-social")).toBe("registries/social.json");
    expect(registryFileSetting({}, CODEBASE_DIR, "demo-atlasmart-firestore")).toBe("");
  });

  it("a bundle file is read relative to the codebase directory, and refused with its reason when it will not do", () => {
    const d = dir();
    writeFileSync(join(d, "social.json"), JSON.stringify(socialBundle()));
    expect(readRegistryBundle("social.json", d).bundle.current.version).toBe(socialRegistry().version);
    expect(() => readRegistryBundle("missing.json", d)).toThrow(/no registry bundle at .*missing\.json/);
    writeFileSync(join(d, "torn.json"), "{ not json");
    expect(() => readRegistryBundle("torn.json", d)).toThrow(/is not JSON/);
    const edited = socialBundle();
    edited.current = { ...edited.current, classes: edited.current.classes.map((c) => (c.id === "notification-30d" ? { ...c, durationDays: 3650 } : c)) };
    expect(() => parseRegistryBundle(edited, "edited")).toThrow(new RegExp(`retention of its current version ${socialRegistry().version} differs from what was published under that name`));
    expect(() => parseRegistryBundle({ ...socialBundle(), published: socialBundle().published.slice(0, 1) }, "behind")).toThrow(new RegExp(`current version ${socialRegistry().version} is not its last published one \\(v1\\)`));
    expect(() => parseRegistryBundle({ current: { version: "v1" }, published: socialBundle().published }, "invalid")).toThrow(/not a valid registry/);
    expect(() => parseRegistryBundle({ current: socialRegistry(), published: [] }, "empty")).toThrow(/publishes no version/);
    expect(parseRegistryBundle(builtIn, "built-in").current.version).toBe(builtIn.current.version);
  });

  it("policy() enforces the named bundle, with its published versions, and the built-in one when none is named", () => {
    const d = dir();
    writeFileSync(join(d, "social.json"), JSON.stringify(socialBundle()));
    vi.stubEnv("RETENTION_REGISTRY_FILE", join(d, "social.json"));
    useRegistryForTests(undefined);
    expect(policy().version).toBe(socialRegistry().version);
    expect(policy().registry.subjects?.scope).toBeUndefined();
    expect(publishedVersions().map((p) => p.version)).toEqual(socialLock().map((l) => l.version));
    expect(registrySource()).toBe(join(d, "social.json"));
    vi.stubEnv("RETENTION_REGISTRY_FILE", "");
    useRegistryForTests(undefined);
    expect(policy().version).toBe(builtIn.current.version);
    expect(registrySource()).toBe("built-in");
    // A broken bundle stops the code that loads it, rather than enforcing something else.
    writeFileSync(join(d, "torn.json"), "{");
    vi.stubEnv("RETENTION_REGISTRY_FILE", join(d, "torn.json"));
    useRegistryForTests(undefined);
    expect(() => policy()).toThrow(/is not JSON/);
  });
});
