import { getFunctions } from "firebase-admin/functions";
import { adminApp } from "../platform/firestore";
import { functionId } from "../platform/function-ids";

/** The payload of one `buildDataExport` task: which export. */
export interface BuildExportTask {
  exportId: string;
}

/**
 * Hands an export's build to the `buildDataExport` queue. The task id is the export's, so an enqueue that is retried
 * queues one build; a duplicate id means it is already queued, which is the goal.
 */
export async function enqueueExportBuild(exportId: string): Promise<void> {
  try {
    await getFunctions(adminApp()).taskQueue<BuildExportTask>(functionId("buildDataExport")).enqueue({ exportId }, { id: `ax-${exportId}` });
  } catch (err) {
    if ((err as { code?: string }).code === "functions/task-already-exists") return;
    throw err;
  }
}
