// This package's path: the public API, nothing else.
import { DockerSandboxClient } from "../lib/index.js";

export const client = new DockerSandboxClient();

export async function createSandbox({ image, id, ports, files, maxProcesses }) {
  const options = {
    image,
    id,
    workspace: { type: "ephemeral" },
    network: ports === undefined ? { mode: "none" } : { mode: "bridge", ports },
  };
  if (files !== undefined) options.files = files;
  if (maxProcesses !== undefined) options.runtime = { maxProcesses };
  return wrap(await client.createSandbox(options));
}

// The sandbox as the bench drives it: the runtime's methods plus destroy and the
// container name (for the two baselines working on the same sandbox).
function wrap(sandbox) {
  const rt = sandbox.runtime;
  return {
    handle: sandbox,
    id: sandbox.id,
    containerName: `anvia-sandbox-${sandbox.id}`,
    publishedPorts: rt.publishedPorts,
    exec: (options) => rt.exec(options),
    execStream: (options) => rt.execStream(options),
    writeTextFile: (options) => rt.writeTextFile(options),
    readFile: (options) => rt.readFile(options),
    listFiles: (options) => rt.listFiles(options),
    startProcess: (options) => rt.startProcess(options),
    stopProcess: (options) => rt.stopProcess(options),
    waitForPort: (options) => rt.waitForPort(options),
    destroy: () => sandbox.destroy(),
  };
}
