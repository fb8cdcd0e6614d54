#!/usr/bin/env node
// The `retention` operator CLI. The code lives in the functions package so the CLI, the scheduled jobs
// and runRetentionJob share one implementation; `npm ci` builds it (the root `prepare` script).
"use strict";
const { existsSync } = require("node:fs");
const { join } = require("node:path");
const main = join(__dirname, "..", "functions", "lib", "cli", "main.js");
if (!existsSync(main)) {
  process.stderr.write("retention: the CLI is not built yet. Run `npm run build` (or `npm ci`) first.\n");
  process.exit(2);
}
require(main);
