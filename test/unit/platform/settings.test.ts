import { afterEach, describe, expect, it, vi } from "vitest";
import { emulatorGate, settings } from "../../../functions/src/platform/settings";

/** Everything an emulated run has (the CLI or a suite on the emulators, outside a function). */
const EMULATED = {
  GCLOUD_PROJECT: "demo-atlasmart-firestore",
  FIRESTORE_EMULATOR_HOST: "127.0.0.1:8080",
  FIREBASE_AUTH_EMULATOR_HOST: "127.0.0.1:9099",
};
/** What the Functions emulator gives a function (firebase-tools sets these). */
const IN_FUNCTIONS_EMULATOR = {
  ...EMULATED,
  FIREBASE_CONFIG: JSON.stringify({ projectId: "demo-atlasmart-firestore" }),
  K_SERVICE: "runRetentionJob",
  FUNCTION_TARGET: "runRetentionJob",
  FUNCTIONS_EMULATOR: "true",
};
/** What a deployed function has: its real project, no emulator hosts. */
const DEPLOYED = {
  GCLOUD_PROJECT: "atlasmart-prod",
  FIREBASE_CONFIG: JSON.stringify({ projectId: "atlasmart-prod" }),
  K_SERVICE: "runretentionjob",
  FUNCTION_TARGET: "runRetentionJob",
};

describe("the asOf gate (emulatorGate)", () => {
  it("opens on the emulators: the CLI and suites, and inside the Functions emulator", () => {
    expect(emulatorGate(EMULATED)).toEqual({ open: true, missing: [] });
    expect(emulatorGate(IN_FUNCTIONS_EMULATOR)).toEqual({ open: true, missing: [] });
    // No project named at all: the CLI's default target is the demo project.
    const { GCLOUD_PROJECT: _, ...unnamed } = EMULATED;
    expect(emulatorGate(unnamed).open).toBe(true);
  });

  it("stays shut in a deployment, whichever single variable is set there", () => {
    expect(emulatorGate(DEPLOYED).open).toBe(false);
    for (const one of [
      { FUNCTIONS_EMULATOR: "true" },
      { FIRESTORE_EMULATOR_HOST: "127.0.0.1:8080" },
      { FIREBASE_AUTH_EMULATOR_HOST: "127.0.0.1:9099" },
      { RETENTION_ALLOW_AS_OF: "true" },
      { GOOGLE_CLOUD_PROJECT: "demo-x" },
      { RETENTION_PROJECT_ID: "demo-x" },
    ]) {
      expect(emulatorGate({ ...DEPLOYED, ...one }).open, JSON.stringify(one)).toBe(false);
    }
    // Even every emulator variable together does not make a real project a demo one.
    expect(emulatorGate({ ...DEPLOYED, FUNCTIONS_EMULATOR: "true", FIRESTORE_EMULATOR_HOST: "h:1", FIREBASE_AUTH_EMULATOR_HOST: "h:2" })).toEqual({
      open: false,
      missing: ["GCLOUD_PROJECT (a demo- project)", "FIREBASE_CONFIG (a demo- project)"],
    });
  });

  it("needs every condition: the truth table over its five inputs", () => {
    const inputs = {
      demoProject: (on: boolean) => ({ GCLOUD_PROJECT: on ? "demo-atlasmart-firestore" : "atlasmart-prod" }),
      firestore: (on: boolean) => (on ? { FIRESTORE_EMULATOR_HOST: "127.0.0.1:8080" } : {}),
      auth: (on: boolean) => (on ? { FIREBASE_AUTH_EMULATOR_HOST: "127.0.0.1:9099" } : {}),
      inFunction: (on: boolean) => (on ? { K_SERVICE: "f", FUNCTION_TARGET: "f" } : {}),
      functionsEmulator: (on: boolean) => (on ? { FUNCTIONS_EMULATOR: "true" } : {}),
    };
    const names = Object.keys(inputs) as (keyof typeof inputs)[];
    let opened = 0;
    for (let bits = 0; bits < 1 << names.length; bits++) {
      const on = Object.fromEntries(names.map((n, i) => [n, (bits & (1 << i)) !== 0])) as Record<keyof typeof inputs, boolean>;
      const env = Object.assign({}, ...names.map((n) => inputs[n](on[n]))) as Record<string, string>;
      const expected = on.demoProject && on.firestore && on.auth && (!on.inFunction || on.functionsEmulator);
      expect(emulatorGate(env).open, JSON.stringify(on)).toBe(expected);
      if (expected) opened++;
    }
    // Open with the function runtime absent (either emulator flag), or present with the Functions emulator.
    expect(opened).toBe(3);
  });

  it("reads a project id from FIREBASE_CONFIG, and an unreadable one keeps the gate shut", () => {
    expect(emulatorGate({ ...EMULATED, FIREBASE_CONFIG: JSON.stringify({ projectId: "atlasmart-prod" }) }).open).toBe(false);
    expect(emulatorGate({ ...EMULATED, FIREBASE_CONFIG: "/path/to/config.json" }).open).toBe(false);
    expect(emulatorGate({ ...EMULATED, GOOGLE_CLOUD_PROJECT: "atlasmart-prod" }).missing).toEqual(["GOOGLE_CLOUD_PROJECT (a demo- project)"]);
  });
});

describe("settings.onEmulator", () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });
  const stub = (env: Record<string, string>) => {
    for (const k of ["GCLOUD_PROJECT", "GOOGLE_CLOUD_PROJECT", "RETENTION_PROJECT_ID", "FIREBASE_CONFIG", "FIRESTORE_EMULATOR_HOST", "FIREBASE_AUTH_EMULATOR_HOST", "K_SERVICE", "FUNCTION_TARGET", "FUNCTIONS_EMULATOR", "RETENTION_ALLOW_AS_OF"]) {
      vi.stubEnv(k, env[k] ?? "");
    }
  };
  it("is the gate over the process environment: FUNCTIONS_EMULATOR alone in a deployment does not open it", () => {
    stub({ ...DEPLOYED, FUNCTIONS_EMULATOR: "true" });
    expect(settings.onEmulator()).toBe(false);
    stub({ ...DEPLOYED, FIRESTORE_EMULATOR_HOST: "127.0.0.1:8080", RETENTION_ALLOW_AS_OF: "true" });
    expect(settings.onEmulator()).toBe(false);
    stub(IN_FUNCTIONS_EMULATOR);
    expect(settings.onEmulator()).toBe(true);
  });
});
