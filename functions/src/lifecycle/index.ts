export { transitionDocument } from "./service";
