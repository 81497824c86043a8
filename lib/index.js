// @anvia/sandbox: Docker sandboxes for AI agents, driven through a native addon that talks
// to the Docker Engine API. The runtime exports are exactly the original package's.
export { DockerSandboxClient } from "./client.js";
export { DockerSandboxError } from "./errors.js";
export { createDockerSandboxTools } from "./tools.js";
