export { nonZero, runRetentionAudit } from "./job";
export { FINDING_CODES } from "./rules";
export { collectReportData } from "./report/data";
export { renderReport } from "./report/page";
export { DEFAULT_AUDIT_PAGE_SIZE, SAMPLE_PER_CODE, scanRetention } from "./scan";
export type { AuditResult } from "./scan";
