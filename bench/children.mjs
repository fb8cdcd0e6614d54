// The bench orchestrators' (size.mjs, extras.mjs) two chores: run one of this folder's scripts as a child process and
// read the JSON its last line prints, and empty the emulator's database between contenders.
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..");

/** Runs `bench/<script>` with `args` (and extra env); resolves with the JSON of its last stdout line. */
export function runChild(script, args, env = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(here, script), ...args], { cwd: root, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.on("exit", (code) => {
      if (code !== 0) return reject(new Error(`${script} ${args.join(" ")} exited ${code}`));
      resolve(JSON.parse(out.trim().split("\n").pop()));
    });
  });
}

/** Empties the emulator's (default) database through its reset endpoint (no functions run beside the bench). */
export async function clearDatabase() {
  const host = process.env.FIRESTORE_EMULATOR_HOST;
  const project = process.env.GCLOUD_PROJECT ?? "demo-atlasmart-firestore";
  const res = await fetch(`http://${host}/emulator/v1/projects/${project}/databases/(default)/documents`, { method: "DELETE" });
  if (!res.ok) throw new Error(`clear failed: ${res.status}`);
}
