export { processTtlDelete } from "./delete";
export type { TtlDeleteOptions, TtlDeleteResult } from "./delete";
export { getVisible, isVisibleSnapshot, openTenants, readVisible, tenantOf } from "./product-reads";
