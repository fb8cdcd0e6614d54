import type * as CloudLogging from "@google-cloud/logging";
import type * as CloudStorage from "@google-cloud/storage";
import type * as AdminStorage from "firebase-admin/storage";

/*
 * Client libraries loaded at their first use rather than at import. Every function instance of the codebase loads the
 * same entry before its first request, and many never use these (the callables that only read write no metric, no
 * anchor and touch no object): loading them costs, on this machine, Cloud Logging's about 0.33 s of CPU and Cloud
 * Storage's about 0.19 s (`npm run bench:cold-start`, docs/SCALE.md). Synchronous, as writing a metric line or naming
 * a bucket is. Pub/Sub is loaded the same way where a notice is sent (platform/processors.ts).
 */
/* eslint-disable @typescript-eslint/no-require-imports */

export const cloudLogging = (): typeof CloudLogging => require("@google-cloud/logging") as typeof CloudLogging;

export const cloudStorage = (): typeof CloudStorage => require("@google-cloud/storage") as typeof CloudStorage;

/** firebase-admin's Storage, which loads Cloud Storage's library with it. */
export const adminStorage = (): typeof AdminStorage => require("firebase-admin/storage") as typeof AdminStorage;
