import { execFile } from "node:child_process";
import { join } from "node:path";
import { repoRoot } from "./policy";

/** What one run of the operator CLI did. */
export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `retention <args>` as an operator would (bin/retention.js from the repo root, this process's environment). */
export const retention = (args: string[]): Promise<Run> => retentionWith(args, {});

/** Runs `retention <args>` with this process's environment and `env` over it (an example's registry bundle, say). */
export const retentionWith = (args: string[], env: Record<string, string>): Promise<Run> =>
  new Promise((resolve) => {
    execFile(process.execPath, [join(repoRoot, "bin", "retention.js"), ...args], { cwd: repoRoot, env: { ...process.env, ...env }, timeout: 90_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stdout, stderr });
    });
  });

/** Runs an example's seed as `npm run seed -- <args>` does (scripts/seed.ts under tsx, this process's environment). */
export const seedExample = (args: string[]): Promise<Run> =>
  new Promise((resolve) => {
    execFile(join(repoRoot, "node_modules", ".bin", "tsx"), [join(repoRoot, "scripts", "seed.ts"), ...args], { cwd: repoRoot, env: process.env, timeout: 90_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stdout, stderr });
    });
  });
