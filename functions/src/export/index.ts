export { exportTenant, verifyExportDir, type ExportVerification } from "./tenant";
export type { ExportFinding, ExportManifest } from "./rules";
