/**
 * The deployed functions, at a glance. Re-exports only; each entry point is a thin adapter in
 * `entrypoints/`.
 */
export {};
