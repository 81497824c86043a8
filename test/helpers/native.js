// Loads the native addon for the unit tests: the debug build when there is one, else the
// release build, initialised with the package's DockerSandboxError class.
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

import { DockerSandboxError } from "../../lib/errors.js";

const require = createRequire(import.meta.url);
const candidates = ["../../build/Debug/anvia_sandbox.node", "../../build/Release/anvia_sandbox.node"];
const found = candidates.find((candidate) => existsSync(fileURLToPath(new URL(candidate, import.meta.url))));
if (found === undefined) {
  throw new Error("The native addon is not built: run `bash scripts/build.sh --debug` first.");
}

export const native = require(found);
native.init(DockerSandboxError);
export { DockerSandboxError };
export default native;
