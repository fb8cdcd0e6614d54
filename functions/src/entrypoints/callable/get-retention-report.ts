import type { z } from "zod";
import { GetRetentionReportInput, type GetRetentionReportOutput } from "../../contract/report";
import { collectReportData } from "../../audit/index";
import { settings } from "../../platform/settings";
import { callable, requireRole, type Caller } from "./shared";

export { GetRetentionReportInput };

/**
 * The dashboard's data, live, for compliance: the read-only retention audit and the evidence-chain walk that
 * `retention report` draws (audit/report/data.ts). Nothing is written.
 */
export async function getRetentionReportHandler(input: z.infer<typeof GetRetentionReportInput>, caller: Caller): Promise<z.infer<typeof GetRetentionReportOutput>> {
  requireRole(caller, "compliance");
  return collectReportData({
    nowMs: Date.now(),
    target: `project ${settings.projectId()}, database ${settings.databaseId()}`,
    scan: { skipSubjects: input.skipSubjects === true },
  });
}

/** The audit scans every governed document: the retention audit's resources (540 s, 2 GiB). */
export const getRetentionReport = callable("getRetentionReport", GetRetentionReportInput, getRetentionReportHandler, { timeoutSeconds: 540, memory: "2GiB" });
