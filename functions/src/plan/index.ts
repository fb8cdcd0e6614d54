export { discoverEntry, discoverSubject, discoveredFrom, type DiscoveredSnapshot } from "./discovery";
export { planSubject } from "./planning";
export { judgeDiscovered, KeptBelow, retainedDescendant, type Subject } from "./rules";
