// The native addon for the unit tests: the same binary and initialisation the package
// uses (lib/native.js decides which build, see ANVIA_SANDBOX_BUILD).
import { native } from "../../lib/native.js";
import { DockerSandboxError } from "../../lib/errors.js";

export { native, DockerSandboxError };
export default native;
