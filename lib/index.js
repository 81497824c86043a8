// @anvia/sandbox: Docker sandboxes for AI agents, driven through a native addon that talks
// to the Docker Engine API. The runtime exports are the original package's three, plus
// withSandbox and its two cleanup errors.
export { DockerSandboxClient } from "./client.js";
export { DockerSandboxError } from "./errors.js";
export { createDockerSandboxTools } from "./tools.js";
export { withSandbox, DockerSandboxCleanupError, DockerSandboxRunError } from "./with-sandbox.js";
