// Run by scripts/test.sh after the suites: nothing labelled anvia.sandbox.id may be left
// on the engine (containers or volumes) once every test has cleaned up.
import { labelledLeftovers } from "../test/helpers/docker.js";

const left = await labelledLeftovers();
if (left.containers.length > 0 || left.volumes.length > 0) {
  console.error("Left on the engine after the tests:", JSON.stringify(left, null, 2));
  process.exit(1);
}
console.log("No sandbox containers or volumes left on the engine.");
