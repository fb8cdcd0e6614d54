export { recordErasure, readLedger, ledgerDb, LedgerDatabaseError } from "./ledger";
export { findLedgerMatches } from "./subjects";
export type { ErasureFacts, LedgerEntry, LedgerMatch } from "./rules";
