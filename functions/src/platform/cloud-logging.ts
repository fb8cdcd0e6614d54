import type * as CloudLogging from "@google-cloud/logging";

/**
 * `@google-cloud/logging`, loaded at its first use rather than at import. Loading it takes about 0.33 s of CPU
 * (`npm run bench:cold-start`, docs/SCALE.md), which every function instance of the codebase would otherwise pay at its
 * cold start, and many (the callables that only read) never write a metric or an anchor. Synchronous, as writing a
 * metric line is.
 */
export function cloudLogging(): typeof CloudLogging {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require("@google-cloud/logging") as typeof CloudLogging;
}
