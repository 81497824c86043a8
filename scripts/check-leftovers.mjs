// Run by scripts/test.sh around the suites: nothing labelled anvia.sandbox.id may be left on
// the engine (containers or volumes) by the tests once they have cleaned up.
//   node scripts/check-leftovers.mjs --snapshot FILE   records what is there before the run
//   node scripts/check-leftovers.mjs FILE              fails on anything new since then
// (Sandboxes that existed before the run are not the tests' to clean up.)
import { readFileSync, writeFileSync } from "node:fs";
import { labelledLeftovers } from "../test/helpers/docker.js";

const args = process.argv.slice(2);
const now = await labelledLeftovers();
if (args[0] === "--snapshot") {
  writeFileSync(args[1], JSON.stringify(now));
  process.exit(0);
}
const before = args[0] ? JSON.parse(readFileSync(args[0], "utf8")) : { containers: [], volumes: [] };
const left = {
  containers: now.containers.filter((c) => !before.containers.includes(c)),
  volumes: now.volumes.filter((v) => !before.volumes.includes(v)),
};
if (left.containers.length > 0 || left.volumes.length > 0) {
  console.error("Left on the engine by the tests:", JSON.stringify(left, null, 2));
  process.exit(1);
}
console.log("No sandbox containers or volumes left on the engine by the tests.");
