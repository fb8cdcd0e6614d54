export { discoverSubject } from "./discovery";
export { planSubject } from "./planning";
