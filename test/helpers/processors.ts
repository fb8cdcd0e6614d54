import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { secretValues } from "../../functions/src/platform/evidence-key";
import { SIGNATURE_HEADER } from "../../functions/src/platform/processors";
import { sign } from "../../functions/src/processors/rules";

/**
 * Stand-ins for the processors of the processor suites: a real HTTP server on the loopback as a webhook, and the
 * real Pub/Sub emulator (gcloud's, the machine's) for a topic. Keys are the emulators' own (functions/.secret.local,
 * as `npm ci` writes them), read the way the code reads them.
 */

/** A processor's first key, as the functions sign with it. */
export function keyOf(secret: string): string {
  const keys = secretValues(secret);
  if (!keys) throw new Error(`no emulator key for ${secret}: run \`node scripts/local-evidence-key.mjs\``);
  return keys[0]!;
}

/** What one request to the webhook was. */
export interface Received {
  body: string;
  headers: IncomingHttpHeaders;
  atMs: number;
}

/** How the webhook answers a request: a status, a body, how long it waits first, and the key it signs the body with (none: unsigned). */
export interface Answer {
  status: number;
  body?: string;
  delayMs?: number;
  signWith?: string;
}

/** A webhook processor: records every request and answers as `answer` says for the n-th one (0-based). */
export class Webhook {
  readonly received: Received[] = [];
  answer: (req: Received, n: number) => Answer = () => ({ status: 204 });
  private server: Server | null = null;
  private readonly timers = new Set<NodeJS.Timeout>();

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const r: Received = { body: Buffer.concat(chunks).toString("utf8"), headers: req.headers, atMs: Date.now() };
        const n = this.received.length;
        this.received.push(r);
        const a = this.answer(r, n);
        const reply = () => {
          const headers: Record<string, string> = { "content-type": "application/json" };
          if (a.signWith !== undefined && a.body !== undefined) headers[SIGNATURE_HEADER] = sign(a.body, a.signWith, Date.now());
          if (!res.destroyed) res.writeHead(a.status, headers).end(a.body ?? "");
        };
        if (a.delayMs) {
          const t = setTimeout(() => {
            this.timers.delete(t);
            reply();
          }, a.delayMs);
          this.timers.add(t);
        } else reply();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/erasures`;
  }

  async stop(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

const PUBSUB_EMULATOR = "/usr/lib/google-cloud-sdk/platform/pubsub-emulator/bin/cloud-pubsub-emulator";

/**
 * The gcloud Pub/Sub emulator on 8085 + EMULATOR_PORT_OFFSET, started for a suite and stopped after it (it starts in
 * a few seconds, offline). Sets PUBSUB_EMULATOR_HOST, which the Pub/Sub client reads. Fails loudly without it.
 */
export async function startPubSubEmulator(): Promise<{ host: string; stop: () => Promise<void> }> {
  if (!existsSync(PUBSUB_EMULATOR)) throw new Error(`the Pub/Sub emulator is not at ${PUBSUB_EMULATOR}: install the Google Cloud CLI's pubsub-emulator component`);
  const port = 8085 + Number(process.env.EMULATOR_PORT_OFFSET ?? 0);
  const host = `127.0.0.1:${port}`;
  const child: ChildProcess = spawn(PUBSUB_EMULATOR, [`--host=127.0.0.1`, `--port=${port}`], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  await new Promise<void>((resolve, reject) => {
    // An emulator that did not start is stopped here: its JVM outlives a failed bind, and the suite never gets a stop.
    const fail = (why: string) => {
      clearTimeout(timer);
      child.kill("SIGKILL");
      reject(new Error(`the Pub/Sub emulator ${why}:\n${output}`));
    };
    const timer = setTimeout(() => fail(`did not start on ${host} in 30 s`), 30_000);
    const seen = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes("Server started")) {
        clearTimeout(timer);
        resolve();
      } else if (output.includes("BindException")) {
        fail(`could not take ${host} (another run's emulator has it? EMULATOR_PORT_OFFSET moves it)`);
      }
    };
    child.stdout!.on("data", seen);
    child.stderr!.on("data", seen);
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the Pub/Sub emulator exited (${code}) before it started:\n${output}`));
    });
  });
  child.removeAllListeners("exit");
  process.env.PUBSUB_EMULATOR_HOST = host;
  return {
    host,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}
