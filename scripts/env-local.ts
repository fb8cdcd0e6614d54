/**
 * Writes functions/.env.local (the values the Functions emulator runs with) from the settings table in
 * functions/src/config/params.ts. `npm run settings:env` after adding or changing a setting; a unit test
 * fails while the file and the table disagree.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { renderEnvLocal } from "../functions/src/config/params";

writeFileSync(join(__dirname, "..", "functions", ".env.local"), renderEnvLocal());
process.stdout.write("functions/.env.local written from the settings table\n");
