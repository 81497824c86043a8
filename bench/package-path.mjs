// This package's path: the public API, nothing else. Two columns of the bench, one client
// each, with the transport named explicitly (so ANVIA_SANDBOX_TRANSPORT cannot change
// what a column measures):
//   agent:  new DockerSandboxClient({ transport: "agent" })  - the in-sandbox agent
//   engine: new DockerSandboxClient({ transport: "engine" }) - Engine API exec/archive
// The agent column drives a sandbox another client made through resumeSandbox (on a
// running container that only attaches).
import { DockerSandboxClient } from "../lib/index.js";

export function packagePath(transport) {
  const client = new DockerSandboxClient(transport === undefined ? {} : { transport });
  return {
    transport: transport ?? "default",
    client,
    createSandbox: async ({ image, id, ports, files, maxProcesses }) => {
      const options = {
        image,
        id,
        workspace: { type: "ephemeral" },
        network: ports === undefined ? { mode: "none" } : { mode: "bridge", ports },
      };
      if (files !== undefined) options.files = files;
      if (maxProcesses !== undefined) options.runtime = { maxProcesses };
      return wrap(await client.createSandbox(options));
    },
    // Attach to a sandbox made by another client. Its destroy() removes the sandbox too:
    // the bench leaves that to the client that made it.
    resumeSandbox: async (id) => wrap(await client.resumeSandbox({ id })),
  };
}

export const agent = packagePath("agent");
export const engine = packagePath("engine");

// The client's default transport (ANVIA_SANDBOX_TRANSPORT, else "auto"): what the tree
// transfer measurements (bench/tree.mjs) use.
const byDefault = packagePath(undefined);
export const client = byDefault.client;
export const createSandbox = byDefault.createSandbox;

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
    watchFiles: (options) => rt.watchFiles(options),
    startTerminal: (options) => rt.startTerminal(options),
    destroy: () => sandbox.destroy(),
  };
}
