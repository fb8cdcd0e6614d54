export { discoverEntry, discoverEntryObjects, discoverObjects, discoverSubject, discoveredFrom, discoveredObjectFrom, type DiscoveredSnapshot } from "./discovery";
export { planSubject } from "./planning";
export { archivedOnErasure, judgeDiscovered, judgeObject, KeptBelow, retainedDescendant, type DiscoveredObject, type Subject } from "./rules";
