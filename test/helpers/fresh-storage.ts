// Every emulator suite file starts with its worker's default bucket empty, as it starts each test with Firestore
// cleared: a file that uploads objects and does not remove them never decides what a later file's purge or audit
// finds (test/helpers/storage.ts#clearStorage empties this worker's bucket only).
import { beforeAll } from "vitest";
import { clearStorage } from "./storage";

beforeAll(clearStorage);
