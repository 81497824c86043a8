// The build step of `anvia-sandbox create-image`: the generated context sent to the
// engine's POST /build by the native addon (src/engine/build_task.c), the build's progress
// printed as it arrives the way `docker build` prints it, and a failure reported as the
// original reported a failed `docker build`: the engine's message on stderr, then
// "Docker command failed: docker build --tag <tag> <directory>".
//
// The engine is the one DockerSandboxClient talks to (DOCKER_HOST, the Docker context,
// the default socket; Docker, Podman, ssh://). `dockerPath` is validated as the client
// validates it; nothing is spawned.
import { DockerSandboxError } from "../errors.js";
import { native, runNative } from "../native.js";

/**
 * Builds `files` (names in `contextPath`) as image `tag`; `io.stdout`/`io.stderr` receive
 * bytes. `host` names another engine, as DockerSandboxClient's option does. Resolves to
 * { imageId } (the engine's id of the image, or null).
 */
export async function buildImage({ contextPath, tag, dockerPath = "docker", files, io, host, abortSignal }) {
  const client = native.clientNew(host === undefined ? { dockerPath } : { dockerPath, host });
  try {
    const token = native.prepareBuildImage(client, { context: contextPath, files, tag });
    return await runNative(token, abortSignal, (kind, chunk) => io.stdout(chunk));
  } catch (error) {
    if (abortSignal?.aborted && error === abortSignal.reason) throw error;
    io.stderr(new TextEncoder().encode(`${error?.message ?? error}\n`));
    throw new DockerSandboxError(`Docker command failed: docker build --tag ${tag} ${contextPath}`, "docker_command_failed", undefined, {
      cause: error,
    });
  }
}
