export { EVIDENCE_TX, openEvidence, recordEvidence } from "./store";
export { verifyEvidence } from "./verify";
export { describeEntry, explainEvidence } from "./explain";
export type { EntryView, ExplainOptions, ExplainQuery, ExplainResult } from "./explain";
