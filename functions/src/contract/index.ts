/**
 * The callable contract: every callable's zod input and output schemas, who may call it and how it refuses.
 * Pure (zod and the pure kernel only, no Firebase or Node imports; .dependency-cruiser.cjs enforces it), so the
 * functions, the typed client (packages/client) and the console share one source, and docs/CALLABLES.md is
 * generated from it.
 */
export * from "./inputs";
export * from "./subjects";
export * from "./requests";
export * from "./holds";
export * from "./admin";
export * from "./evidence";
export * from "./report";
export * from "./registry";
export * from "./access";
export * from "./callables";
export * from "./hold-target";
