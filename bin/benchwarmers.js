#!/usr/bin/env node
// `npx @wendellresearch-ai/benchwarmers [command ...]` runs the Python program `benchwarmers`
// (for MCP clients: `npx -y @wendellresearch-ai/benchwarmers mcp`, a stdio MCP server). The
// package installs it as `benchwarmers` and as `bench` (bin/bench.js), the same program under the
// CLI's short name, as the Python package's two console scripts are.
//
// It looks, in order, for:
//   1. BENCHWARMERS_PYTHON: an interpreter you name (a virtualenv's python, say);
//   2. a Python 3.11+ on PATH that can import benchwarmers_mcp (python3, python; py -3 on Windows);
//   3. uvx, then pipx, running the PyPI package `benchwarmers` at this package's version.
// and runs `<python> -m benchwarmers_mcp <args>` (or the uvx/pipx equivalent) with this process's
// stdin, stdout and stderr handed straight to it, so the MCP byte stream never passes through
// Node. Nothing is ever written to stdout here; SIGINT, SIGTERM and SIGHUP are passed on, and the
// exit code (or signal) of the program is this process's own.
"use strict";

const { spawn, spawnSync } = require("node:child_process");
const path = require("node:path");

const VERSION = require(path.join(__dirname, "..", "package.json")).version;
const SPEC = `benchwarmers==${VERSION}`;
const MODULE = "benchwarmers_mcp";
const IS_WINDOWS = process.platform === "win32";
const PROBE = `import sys, ${MODULE}; sys.exit(0 if sys.version_info >= (3, 11) else 3)`;
const SIGNALS = IS_WINDOWS ? ["SIGINT", "SIGTERM"] : ["SIGINT", "SIGTERM", "SIGHUP"];

function runs(command, args) {
  const probe = spawnSync(command, args, { stdio: "ignore", windowsHide: true, timeout: 20000 });
  return !probe.error && probe.status === 0;
}

function pythons() {
  const named = process.env.BENCHWARMERS_PYTHON;
  if (named) return [[named, []]];
  const found = IS_WINDOWS ? [["py", ["-3"]], ["python", []], ["python3", []]] : [["python3", []], ["python", []]];
  return found;
}

// [command, args] for the first way that works, or null; `name` is the console script uvx and pipx run.
function choose(name, userArgs) {
  for (const [command, pre] of pythons()) {
    if (runs(command, [...pre, "-c", PROBE])) return [command, [...pre, "-m", MODULE, ...userArgs]];
  }
  if (process.env.BENCHWARMERS_PYTHON) return null; // named explicitly: never fall back behind the user's back
  if (runs("uvx", ["--version"])) return ["uvx", ["--from", SPEC, name, ...userArgs]];
  if (runs("pipx", ["--version"])) return ["pipx", ["run", "--spec", SPEC, name, ...userArgs]];
  return null;
}

function explain(name) {
  const named = process.env.BENCHWARMERS_PYTHON;
  const why = named
    ? `BENCHWARMERS_PYTHON=${named} is not a Python 3.11+ that can import ${MODULE}.`
    : "found no Python 3.11+ with Benchwarmers installed, and neither uvx nor pipx.";
  process.stderr.write(
    `${name}: ${why}\n` +
      "Install it with `python3 -m pip install benchwarmers` (Python 3.11 or later),\n" +
      "or install uv (https://docs.astral.sh/uv/) so that `uvx` can run it.\n"
  );
}

function run(name) {
  const choice = choose(name, process.argv.slice(2));
  if (choice === null) {
    explain(name);
    process.exit(127);
  }
  const [command, args] = choice;
  const child = spawn(command, args, { stdio: "inherit", windowsHide: true });
  const forward = (signal) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  for (const signal of SIGNALS) process.on(signal, forward);
  child.on("error", (err) => {
    process.stderr.write(`${name}: could not start ${command}: ${err.message}\n`);
    process.exit(126);
  });
  child.on("exit", (code, signal) => {
    if (signal) {
      for (const sig of SIGNALS) process.removeListener(sig, forward);
      process.kill(process.pid, signal);
      return;
    }
    process.exit(code ?? 1);
  });
}

module.exports = { run };

if (require.main === module) run("benchwarmers");
