export { discoverEntry, entryRoots, discoverEntryObjects, discoverObjects, discoverSubject, discoveredFrom, discoveredObjectFrom, subjectVars, type DiscoveredSnapshot } from "./discovery";
export { planSubject } from "./planning";
export { archivedOnErasure, archivesInTrees, judgeDiscovered, judgeObject, judgeUnplanned, KeptBelow, retainedDescendant, type DiscoveredObject, type Subject } from "./rules";
