export { exportSubject, exportTenant, verifyExportDir, type ExportVerification } from "./subject";
export type { ExportFinding, ExportManifest } from "./rules";
