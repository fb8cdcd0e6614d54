export { runExpiryBackfill } from "./job";
