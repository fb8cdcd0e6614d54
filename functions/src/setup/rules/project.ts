import { parse as parseDotenv } from "dotenv";
import { ANCHOR_SINK_FILTER } from "../../evidence/rules";

/**
 * The adopting project as `retention setup` reads it: its firebase.json (the kit's stanza and instances, its
 * Firestore rules and indexes files), each instance's env files, and the commands a kit cannot run for it. Pure.
 */

/** A firebase.json `functions` entry that installs a function kit (what `functions:kits:install` writes). */
export interface KitStanza {
  /** Its position in firebase.json's `functions` (always an array once a kit is installed). */
  position: number;
  kit: string;
  source: string;
  /** Instance id to its config folder (relative to the project). */
  instances: Record<string, string>;
  ignore?: string[];
}

/** The `functions` entries of a firebase.json, whichever form it has (one object, or a list). */
export function functionsEntries(firebaseJson: Record<string, unknown>): Record<string, unknown>[] {
  const f = firebaseJson.functions;
  if (Array.isArray(f)) return f as Record<string, unknown>[];
  return f && typeof f === "object" ? [f as Record<string, unknown>] : [];
}

/** Every kit stanza of a firebase.json. */
export function kitStanzas(firebaseJson: Record<string, unknown>): KitStanza[] {
  return functionsEntries(firebaseJson).flatMap((e, position) => {
    if (typeof e.kit !== "string" || typeof e.source !== "string" || !e.instances || typeof e.instances !== "object") return [];
    return [{ position, kit: e.kit, source: e.source, instances: e.instances as Record<string, string>, ...(Array.isArray(e.ignore) ? { ignore: e.ignore as string[] } : {}) }];
  });
}

/**
 * What a kit's codebase must not upload when it deploys: besides firebase-tools' own defaults (node_modules, .git),
 * the emulators' local files (.secret.local holds the emulators' evidence key, .env.local their settings). A kit
 * stanza has no `ignore` of its own, and without one firebase-tools uploads them.
 */
export const KIT_CODEBASE_IGNORE = ["node_modules", ".git", "firebase-debug.log", "firebase-debug.*.log", "*.local"];

/** The values an instance's env files give (in firebase-tools' order: .env, .env.<project>, a later file wins). */
export function instanceEnv(files: readonly (string | null)[]): Record<string, string> {
  return Object.assign({}, ...files.map((text) => (text === null ? {} : parseDotenv(text)))) as Record<string, string>;
}

/** `text` (a dotenv file) with `key` set to `value`: its line replaced where it has one, appended where not; every other line kept. */
export function setEnvLine(text: string, key: string, value: string): string {
  const line = `${key}=${/[\s#"'=]/.test(value) ? JSON.stringify(value) : value}`;
  const re = new RegExp(`^\\s*${key}\\s*=.*$`, "m");
  if (re.test(text)) return text.replace(re, line);
  return `${text}${text === "" || text.endsWith("\n") ? "" : "\n"}${line}\n`;
}

/** One instance's governed databases (its primary, RETENTION_DATABASE_ID, by default `(default)`) and its ledger's. */
export interface InstanceDatabases {
  instance: string;
  governed: string[];
  ledger: string;
}

/**
 * Instances that would share data: the control plane's collections (requests, holds, the hold fence, the evidence
 * chains, the leases) live in each governed database under fixed names, so two instances governing one database would
 * take each other's requests and break each other's chains. Each instance governs databases of its own, and no
 * instance's ledger is another's governed database. Returns each problem found.
 */
export function databaseCollisions(instances: readonly InstanceDatabases[]): string[] {
  const problems: string[] = [];
  const owner = new Map<string, string>();
  for (const i of instances) {
    for (const d of i.governed) {
      const other = owner.get(d);
      if (other !== undefined && other !== i.instance) problems.push(`instances ${other} and ${i.instance} both govern database ${d}: give each instance its own (RETENTION_DATABASE_ID in its config)`);
      else owner.set(d, i.instance);
    }
  }
  for (const i of instances) {
    const other = owner.get(i.ledger);
    if (other !== undefined) problems.push(`instance ${i.instance}'s erasure ledger is ${i.ledger}, which instance ${other} governs: a ledger lives in a database of its own (RETENTION_LEDGER_DATABASE_ID)`);
  }
  return problems;
}

/** One instance's Cloud Storage buckets: those its registry's storage entries name, `(default)` resolved as its setting says. */
export interface InstanceBuckets {
  instance: string;
  buckets: string[];
}

/**
 * Instances that would share Cloud Storage objects: a bucket is the project's, not a database's, so two instances whose
 * data maps reach the same bucket would each delete, hold-mark and audit the other's objects (one instance's erasure of
 * a user would delete the objects another instance holds). Each instance needs buckets of its own
 * (RETENTION_STORAGE_BUCKET for the registry's `(default)`). Returns each problem found.
 */
export function bucketCollisions(instances: readonly InstanceBuckets[]): string[] {
  const problems: string[] = [];
  const owner = new Map<string, string>();
  for (const i of instances) {
    for (const b of new Set(i.buckets)) {
      const other = owner.get(b);
      if (other !== undefined) problems.push(`instances ${other} and ${i.instance} both reach Cloud Storage bucket ${b}: give each instance its own (RETENTION_STORAGE_BUCKET in its config, for the registry's (default))`);
      else owner.set(b, i.instance);
    }
  }
  return problems;
}

/** firebase.json's Firestore entry for a database: its rules and indexes files (`firestore` as one object or a list). */
export function firestoreFilesFor(firebaseJson: Record<string, unknown>, database: string): { rules?: string; indexes?: string } | null {
  const f = firebaseJson.firestore;
  const entries = Array.isArray(f) ? (f as Record<string, unknown>[]) : f && typeof f === "object" ? [f as Record<string, unknown>] : [];
  const entry = entries.find((e) => (typeof e.database === "string" ? e.database : "(default)") === database);
  if (!entry) return null;
  return { ...(typeof entry.rules === "string" ? { rules: entry.rules } : {}), ...(typeof entry.indexes === "string" ? { indexes: entry.indexes } : {}) };
}

export interface RunOnceInput {
  project: string;
  instance: string;
  ledgerDatabase: string;
  /** The governed database's location (e.g. `eur3`); unknown offline, so a variable the operator sets when absent. */
  location?: string;
  /** The bucket the evidence anchors go to. */
  anchorBucket: string;
}

/**
 * What a kit cannot do for the project and `retention setup` cannot do offline: the commands an operator runs once
 * per instance, exact but for the database location when it was not given. The evidence key goes to Secret Manager
 * under the instance's name (firebase-tools binds `kit-<instance>-RETENTION_EVIDENCE_KEY` to the functions'
 * RETENTION_EVIDENCE_KEY); the ledger gets its own database; the anchors a bucket under a locked retention policy and
 * the log sink that fills it (docs/EVIDENCE-LEDGER.md). The TTL policies are not here: they are in the index file,
 * and `firebase deploy --only firestore:indexes` creates them.
 */
export function runOnceCommands(o: RunOnceInput): string {
  const loc = o.location ?? "$LOCATION";
  return [
    ...(o.location ? [] : ["LOCATION=<the location of the governed database, e.g. eur3 or nam5>"]),
    "# The evidence key of this instance (a fresh 32-byte key; keep no copy of it elsewhere):",
    `openssl rand -hex 32 | npx firebase-tools@15 functions:secrets:set kit-${o.instance}-RETENTION_EVIDENCE_KEY --data-file=- --project=${o.project}`,
    "# The erasure ledger's own database (never restored with the governed one), if it does not exist yet:",
    `gcloud firestore databases create --database=${o.ledgerDatabase} --location=${loc} --project=${o.project}`,
    "# The evidence anchors: a bucket under a retention policy, and the log sink that fills it (once per project):",
    `gcloud storage buckets create gs://${o.anchorBucket} --project=${o.project} --location=${loc} --uniform-bucket-level-access --retention-period=7y`,
    `gcloud logging sinks create retention-evidence-anchors storage.googleapis.com/${o.anchorBucket} --project=${o.project} --log-filter='${ANCHOR_SINK_FILTER}'`,
    `WRITER=$(gcloud logging sinks describe retention-evidence-anchors --project=${o.project} --format='value(writerIdentity)')`,
    `gcloud storage buckets add-iam-policy-binding gs://${o.anchorBucket} --member="$WRITER" --role=roles/storage.objectCreator`,
    "# Once the first hourly file of anchors is in the bucket and verifies (retention verify-evidence --anchors): lock the policy. Irreversible.",
    `gcloud storage buckets update gs://${o.anchorBucket} --lock-retention-period`,
  ].join("\n");
}
