import type { z } from "zod";
import { readExportPage } from "../../access/index";
import { GetDataExportInput } from "../../contract/access";
import { callable, type Caller } from "./shared";

export { GetDataExportInput };

/**
 * A page of a ready export, for its subject only, until it expires (access/rules.ts#assertMayFetch); page 0 starts a
 * download and is recorded as evidence.
 */
export async function getDataExportHandler(input: z.infer<typeof GetDataExportInput>, caller: Caller) {
  return readExportPage({ exportId: input.exportId, uid: caller.uid, from: input.from ?? 0, nowMs: Date.now() });
}

/** User-facing: App Check is required where enforcement is on. Pages of up to 4 MiB (base64 more): the memory to match. */
export const getDataExport = callable("getDataExport", GetDataExportInput, getDataExportHandler, { appCheck: true, memory: "512MiB" });
