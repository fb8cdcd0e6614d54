import type { z } from "zod";
import { enqueueExportBuild, requestAccessExport, type AccessExport } from "../../access/index";
import { RequestDataExportInput } from "../../contract/access";
import { permissionDenied } from "../../kernel/errors";
import { log } from "../../platform/logs";
import { scopesOfRequester } from "../../requests/index";
import { callable, type Caller } from "./shared";

export { RequestDataExportInput };

/** An export as its asker is told it. */
export const exportView = (e: AccessExport, created: boolean) => ({
  exportId: e.exportId,
  state: e.state,
  requestedAt: new Date(e.requestedAtMs).toISOString(),
  // Until when it can be downloaded: a READY export's expiry (the record of one not ready carries only TTL's date).
  expiresAt: e.state === "READY" && e.expireAtMs !== null ? new Date(e.expireAtMs).toISOString() : null,
  created,
});

/**
 * The signed-in user asks for a copy of their own data (access/service.ts): only their own, found in the scopes their
 * erasure would be opened in; a cooldown after their last one; an export already being built or still downloadable is
 * returned instead. The build is handed to the buildDataExport task queue (`enqueue`; a suite without the Cloud Tasks
 * emulator runs the task's body itself).
 */
export async function requestDataExportHandler(_input: z.infer<typeof RequestDataExportInput>, caller: Caller, enqueue: (exportId: string) => Promise<void> = enqueueExportBuild) {
  const scopes = await scopesOfRequester(caller.uid, caller.tenantId);
  if (scopes.length === 0) throw permissionDenied("NO_TENANT_CLAIM", "Only an app user with a tenant can ask for a copy of their data.");
  const { export: e, created } = await requestAccessExport({ uid: caller.uid, scopes, source: "subject", actor: { type: "user", id: caller.uid }, nowMs: Date.now() });
  if (created) {
    log.info("access.export.requested", { exportId: e.exportId });
    await enqueue(e.exportId);
  }
  return exportView(e, created);
}

/** User-facing: App Check is required where enforcement is on. */
export const requestDataExport = callable("requestDataExport", RequestDataExportInput, (input, caller) => requestDataExportHandler(input, caller), { appCheck: true });
