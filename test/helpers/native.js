// The native addon for the unit tests: the same binary and initialisation the package
// uses (lib/native.js decides which build, see ANVIA_SANDBOX_BUILD).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { native } from "../../lib/native.js";
import { DockerSandboxError } from "../../lib/errors.js";

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
