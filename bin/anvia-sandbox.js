#!/usr/bin/env node
// The package's command, `anvia-sandbox` (package.json "bin"). It runs only when it is
// the program Node was started with: argv[1] and this file are the same file once both
// are resolved (through node_modules/.bin links, say); importing it runs nothing.
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { runCli } from "../lib/cli/cli.js";

export { runCli };

export function isCliEntryPoint(argv1 = process.argv[1], moduleUrl = import.meta.url) {
  try {
    return argv1 !== undefined && realpathSync(argv1) === realpathSync(fileURLToPath(moduleUrl));
  } catch {
    return false;
  }
}

if (isCliEntryPoint()) {
  runCli().then((code) => {
    process.exitCode = code;
  });
}
