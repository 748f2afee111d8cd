#!/usr/bin/env node
// `bench`: the same program as `benchwarmers` (bin/benchwarmers.js) under the CLI's short name, as
// the Python package installs both console scripts. Another program called `bench` (the Frappe
// framework's) may come first on your PATH: `benchwarmers` is the same commands.
"use strict";

require("./benchwarmers.js").run("bench");
