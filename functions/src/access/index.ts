export { buildAccessExport, readAccessExport, readExportPage, requestAccessExport, EXPORT_PARTS, type ExportPage, type RequestExportInput } from "./service";
export { enqueueExportBuild, type BuildExportTask } from "./tasks";
export type { AccessExport, ExportState } from "./rules";
