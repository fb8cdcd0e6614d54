export { replayErasures, type ReplayOptions, type ReplayReport } from "./replay";
export type { ReplaySubject } from "./rules";
