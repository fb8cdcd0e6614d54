export { activeDataKeys, DataKeys, dataKeyIdFor, DataKeyUnavailableError, keyForSubject, shredMarkerRef, type DataKey, type KeyLookup } from "./keys";
export { openCopy, type OpenedCopy } from "./copies";
export { isSealed, keySubjectOf, periodOf, plannedShredMs, seal, sealAad, type KeySubject, type Sealed } from "./rules";
export { shredDueKeys, type ShredOptions, type ShredSummary } from "./shred";
export { sealPlaintextArchives, SEAL_MIGRATION_DOC, type SealMigrationOptions, type SealMigrationSummary } from "./migrate";
