import type { Role } from "firebase-functions/v2";

/**
 * The IAM roles the kit's functions run with. Installed as a function kit, the functions run as a service account
 * firebase-tools provisions for the codebase with exactly the roles declared by `requiresRole` (kit/load.ts), so
 * this list is everything they do:
 */
export const KIT_ROLES: readonly { role: Role; why: string }[] = [
  { role: "roles/datastore.user", why: "read and write the governed databases, the erasure ledger and, on the emulators, the anchors database" },
  { role: "roles/firebaseauth.admin", why: "delete an erased user's Auth account, and read a deleted user's claims in the backstop" },
  { role: "roles/storage.objectAdmin", why: "list, hold-mark and delete the data map's Cloud Storage objects" },
  { role: "roles/cloudtasks.enqueuer", why: "enqueue purgeRequest, purgeChunk, applyRetentionHold, deliverProcessorNotice and buildDataExport tasks" },
  { role: "roles/pubsub.publisher", why: "publish deletion notices to the registry's Pub/Sub processors' topics" },
  { role: "roles/iam.serviceAccountUser", why: "give each enqueued task the functions' own identity, which Cloud Tasks presents to the task function" },
  { role: "roles/run.invoker", why: "let Cloud Tasks, Cloud Scheduler and Eventarc invoke the functions as that identity" },
  { role: "roles/eventarc.eventReceiver", why: "receive the Firestore delete events (TTL triggers) and the Auth delete event (backstop)" },
];
