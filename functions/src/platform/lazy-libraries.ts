import type * as CloudLogging from "@google-cloud/logging";
import type * as CloudStorage from "@google-cloud/storage";
import type * as AdminStorage from "firebase-admin/storage";
import type * as PubSub from "@google-cloud/pubsub";

/*
 * Client libraries loaded at their first use rather than at import. Every function instance of the codebase loads the
 * same entry before its first request, and many never use these (the callables that only read write no metric, no
 * anchor and touch no object): loading them costs, on this machine, Cloud Logging's about 0.33 s of CPU and Cloud
 * Storage's about 0.19 s (`npm run bench:cold-start`, docs/SCALE.md). Synchronous, as writing a metric line or naming
 * a bucket is. Pub/Sub's library (about 0.3 s) is needed only where a processor's notice is published.
 */
/* eslint-disable @typescript-eslint/no-require-imports */

export const cloudLogging = (): typeof CloudLogging => require("@google-cloud/logging") as typeof CloudLogging;

export const cloudStorage = (): typeof CloudStorage => require("@google-cloud/storage") as typeof CloudStorage;

/** firebase-admin's Storage, which loads Cloud Storage's library with it. */
export const adminStorage = (): typeof AdminStorage => require("firebase-admin/storage") as typeof AdminStorage;

/** Pub/Sub's library, for a processor's notice published to a topic (platform/processors.ts#publishNotice). */
export const pubSub = (): typeof PubSub => require("@google-cloud/pubsub") as typeof PubSub;
