export { discoverDraft, type DiscoverOptions } from "./discover";
export { DEFAULT_BUCKET_SAMPLE, DEFAULT_SAMPLE } from "./sample";
export {
  DEFAULT_THRESHOLDS,
  DRAFT_FORMAT,
  draftRegistry,
  nextVersion,
  UNREVIEWED_CLASS,
  type Candidate,
  type DiscoverDraft,
  type Thresholds,
  type Unclassified,
} from "./rules";
