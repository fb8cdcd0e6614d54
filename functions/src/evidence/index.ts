export { EVIDENCE_TX, evidenceHeadRef, openEvidence, openEvidenceFrom, recordEvidence, type EvidenceAppender } from "./store";
export { verifyEvidence, verifyLedger, type EvidenceVerification, type VerifyOptions } from "./verify";
export { anchorEvidence, runEvidenceAnchor } from "./anchor";
export { type AnchorSource } from "./anchor-source";
export { bundleLedger, exportEvidence, readBundle, type BundleManifest } from "./bundle";
export { keyedSubjectHash, keyedSubjectHashes, verifierKeys, EvidenceKeyMissingError } from "./keys";
export { readEntry, verifyEntries } from "./read";
export { describeEntry, explainEvidence, explainQueryOf } from "./explain";
export type { EntryView, ExplainInput, ExplainOptions, ExplainQuery, ExplainResult } from "./explain";
