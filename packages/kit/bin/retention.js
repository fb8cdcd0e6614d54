#!/usr/bin/env node
// The `retention` CLI of the function kit: `retention setup` and the operator commands, run from the project the kit
// is installed in (`npx --prefix <the kit's codebase> retention <command>`). Built into lib/ with the functions.
"use strict";
require("../lib/cli/main.js");
