export { buildAccessExport, eraseSubjectExports, readAccessExport, readExportPage, requestAccessExport, EXPORT_PARTS, type BuildOptions, type BuildOutcome, type ErasedExports, type ExportPage, type RequestExportInput } from "./service";
export { enqueueExportBuild, type BuildExportTask } from "./tasks";
export type { AccessExport, ExportState } from "./rules";
