export { EVIDENCE_TX, openEvidence, recordEvidence } from "./store";
export { verifyEvidence } from "./verify";
export { keyedSubjectHash, keyedSubjectHashes } from "./keys";
