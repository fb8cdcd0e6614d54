export { processTtlDelete } from "./delete";
export type { TtlDeleteOptions, TtlDeleteResult } from "./delete";
