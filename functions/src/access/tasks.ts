import { enqueueOnce } from "../platform/tasks";

/** The payload of one `buildDataExport` task: which export. */
export interface BuildExportTask {
  exportId: string;
}

/**
 * Hands an export's build to the `buildDataExport` queue. The task id is the export's, so an enqueue that is retried
 * queues one build; a duplicate id means it is already queued, which is the goal.
 */
export async function enqueueExportBuild(exportId: string): Promise<void> {
  await enqueueOnce<BuildExportTask>("buildDataExport", { exportId }, `ax-${exportId}`);
}
