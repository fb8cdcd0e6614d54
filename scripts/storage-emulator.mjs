// The Cloud Storage emulator, without its rules runtime (docs/STORAGE.md, "The Storage emulator here").
//
// The Firebase CLI cannot start the Storage emulator offline: before it serves anything it downloads
// cloud-storage-rules-runtime-*.jar, the Java process that evaluates Storage security rules for client traffic.
// The emulator itself is firebase-tools' own Node server (lib/emulator/storage/). Admin SDK and gcloud traffic
// (the JSON API under /storage/v1, /upload/storage/v1, /b/...) never reaches the rules runtime, so this module
// builds that same server without starting the runtime or loading any rules. Client (Firebase SDK, /v0) traffic has
// no ruleset to check against and is refused (403): this emulator serves the Admin SDK only, which is all the
// engine uses.
//
// scripts/emulators.mjs imports startStorageEmulator for `--only ...,storage`; `--only storage` runs it alone.
import { mkdtempSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(join(root, "package.json"));
/** The firebase-tools this was written against: its storage emulator's internals are not a public API. */
const KNOWN_VERSION = "14.27.0";

/**
 * Starts firebase-tools' Storage emulator server on host:port, rules evaluation off. Its blobs go to a fresh
 * temporary directory of its own (the stock emulator shares one per machine, so two harnesses side by side would
 * delete each other's files on stop). Resolves once it accepts connections; `stop()` closes it and removes the blobs.
 */
export async function startStorageEmulator({ host = "127.0.0.1", port = 9199, projectId }) {
  const version = JSON.parse(readFileSync(require.resolve("firebase-tools/package.json"), "utf8")).version;
  if (version !== KNOWN_VERSION) {
    throw new Error(
      `scripts/storage-emulator.mjs builds firebase-tools ${KNOWN_VERSION}'s Storage emulator from its internals, ` +
        `but firebase-tools ${version} is installed: check lib/emulator/storage/ (index.js, server.js) still fit, then update KNOWN_VERSION.`,
    );
  }
  const { StorageEmulator } = require("firebase-tools/lib/emulator/storage/index.js");
  const { createApp } = require("firebase-tools/lib/emulator/storage/server.js");
  const { EmulatorRegistry } = require("firebase-tools/lib/emulator/registry.js");

  const blobs = mkdtempSync(join(tmpdir(), "storage-emulator-"));
  class AdminOnlyStorageEmulator extends StorageEmulator {
    getPersistenceTmpDir() {
      return blobs;
    }
  }
  // StorageEmulator.start() would start the rules runtime (the download) and the rules file watcher; the server
  // is built here from the same pieces instead. `rules` is never loaded, so no file is watched.
  const emulator = new AdminOnlyStorageEmulator({ projectId, host, port, rules: { name: "(none)", content: "" }, auto_download: false });
  // The server builds selfLink and mediaLink URLs from the registry's entry for the Storage emulator.
  EmulatorRegistry.set("storage", emulator);
  const app = await createApp(projectId, emulator);
  const server = await new Promise((resolvePromise, reject) => {
    const s = app.listen(port, host);
    s.once("listening", () => resolvePromise(s));
    s.once("error", reject);
  });
  // Node closes an idle keep-alive connection after 5 s; a client that sends on it at that moment (the Storage
  // client pools its sockets, and a test that stalls a runner leaves them idle that long) gets "socket hang up".
  // Idle connections stay open as long as a client would keep them.
  server.keepAliveTimeout = 120_000;
  server.headersTimeout = 121_000;
  return {
    host,
    port,
    async stop() {
      server.closeAllConnections();
      await new Promise((resolvePromise) => server.close(() => resolvePromise()));
      await emulator.stop().catch(() => undefined);
    },
  };
}

