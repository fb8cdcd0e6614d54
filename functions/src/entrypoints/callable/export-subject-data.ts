import type { z } from "zod";
import { enqueueExportBuild, requestAccessExport } from "../../access/index";
import { ExportSubjectDataInput } from "../../contract/access";
import { log } from "../../platform/logs";
import { resolveUserSubjects } from "../../requests/index";
import { exportView } from "./request-data-export";
import { actorOf, callable, requireRole, type Caller } from "./shared";

export { ExportSubjectDataInput };

/**
 * Compliance runs a user's access export for a request received another way (an email, a letter): the same export,
 * in the scopes the registry finds the user in, without the subject's cooldown; the user downloads it in the app.
 */
export async function exportSubjectDataHandler(input: z.infer<typeof ExportSubjectDataInput>, caller: Caller, enqueue: (exportId: string) => Promise<void> = enqueueExportBuild) {
  requireRole(caller, "compliance");
  const subjects = await resolveUserSubjects(input.uid);
  const { export: e, created } = await requestAccessExport({ uid: input.uid, scopes: subjects.map((s) => s.tenantId), source: "staff", actor: actorOf(caller), reference: input.reference, nowMs: Date.now() });
  if (created) {
    log.info("access.export.requested", { exportId: e.exportId });
    await enqueue(e.exportId);
  }
  return exportView(e, created);
}

export const exportSubjectData = callable("exportSubjectData", ExportSubjectDataInput, (input, caller) => exportSubjectDataHandler(input, caller));
