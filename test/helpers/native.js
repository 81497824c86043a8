// The native addon for the unit tests: the same binary and initialisation the package
// uses (lib/native.js decides which build, see ANVIA_SANDBOX_BUILD), and the unit tests'
// own natives (tarBuild, posixJoin, textPage, ...), which only the debug and asan builds
// have (ANVIA_TEST_EXPORTS in binding.gyp): under the release build they come from the
// debug build beside it, loaded as a second module and given the same error classes.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { native as packageNative } from "../../lib/native.js";
import { DockerSandboxError, nullByteArgumentError } from "../../lib/errors.js";
import { TEST_NATIVES } from "./test-natives.js";

export { TEST_NATIVES };

function withTestNatives() {
  if (typeof packageNative.tarBuild === "function") return packageNative;
  const debug = fileURLToPath(new URL("../../build-debug/build/Debug/anvia_sandbox.node", import.meta.url));
  if (!existsSync(debug)) throw new Error(`the unit tests' natives are in the debug build only, and ${debug} is not there: bash scripts/build.sh --debug`);
  const testBuild = createRequire(import.meta.url)(debug);
  testBuild.init(DockerSandboxError, nullByteArgumentError);
  const merged = Object.create(packageNative);
  for (const name of TEST_NATIVES) merged[name] = testBuild[name];
  return merged;
}
const native = withTestNatives();

export { native, DockerSandboxError };
export default native;

// A stand-in for the agent binary (x86_64; only its bytes travel behind a fake engine),
// made the addon's agent directory for the rest of the test file. Returns the work
// directory (removed after the file's tests) and the bytes.
export function standInAgent(test, prefix, bytes) {
  const work = mkdtempSync(join(tmpdir(), prefix));
  test.after(() => rmSync(work, { recursive: true, force: true }));
  mkdirSync(join(work, "agents", "x86_64"), { recursive: true });
  writeFileSync(join(work, "agents", "x86_64", "anvia-agent"), bytes);
  native.setAgentDir(join(work, "agents"));
  return { work, bytes };
}
