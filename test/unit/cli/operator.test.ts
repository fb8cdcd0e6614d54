import { describe, expect, it } from "vitest";
import { resolveOperator, type OperatorSources } from "../../../functions/src/cli/operator";
import { ConnectionError, UsageError } from "../../../functions/src/cli/target";

const sources = (over: Partial<OperatorSources> = {}): OperatorSources => ({
  flag: undefined,
  env: undefined,
  osUser: () => "alice",
  adcAccount: () => Promise.resolve("ops@atlasmart.example"),
  ...over,
});
const emulator = { emulator: "127.0.0.1:8080" };
const project = { emulator: null };

describe("the CLI's operator identity", () => {
  it("on the emulators: --as, else RETENTION_OPERATOR, else the OS user", async () => {
    expect(await resolveOperator(emulator, sources({ flag: "r-3001", env: "someone-else" }))).toEqual({ actor: { type: "staff", id: "r-3001" }, source: "flag" });
    expect(await resolveOperator(emulator, sources({ env: "ops.oncall@example.com" }))).toEqual({ actor: { type: "staff", id: "ops.oncall@example.com" }, source: "env" });
    expect(await resolveOperator(emulator, sources())).toEqual({ actor: { type: "staff", id: "alice" }, source: "os-user" });
    await expect(resolveOperator(emulator, sources({ osUser: () => null }))).rejects.toBeInstanceOf(UsageError);
    await expect(resolveOperator(emulator, sources({ flag: "two words" }))).rejects.toThrow(/is not an identity/);
  });

  it("on a project: the Application Default Credentials' account, and nobody may claim another", async () => {
    expect(await resolveOperator(project, sources())).toEqual({ actor: { type: "staff", id: "ops@atlasmart.example" }, source: "adc" });
    await expect(resolveOperator(project, sources({ flag: "r-3001" }))).rejects.toThrow(/only on the emulators/);
    await expect(resolveOperator(project, sources({ env: "r-3001" }))).rejects.toThrow(/only on the emulators/);
    // No account behind the credentials: the command does not run as nobody (exit 2, a connection problem).
    await expect(resolveOperator(project, sources({ adcAccount: () => Promise.resolve(null) }))).rejects.toBeInstanceOf(ConnectionError);
  });

  it("never falls back to a fixed name", async () => {
    const seen = new Set<string>();
    for (const s of [sources({ flag: "a" }), sources({ env: "b" }), sources({ osUser: () => "c" })]) seen.add((await resolveOperator(emulator, s)).actor.id);
    seen.add((await resolveOperator(project, sources({ adcAccount: () => Promise.resolve("d@x.example") }))).actor.id);
    expect([...seen]).toEqual(["a", "b", "c", "d@x.example"]);
  });
});
