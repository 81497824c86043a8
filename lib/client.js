// DockerSandboxClient: validates its input (in C, with the original's messages), checks
// the caller's AbortSignal where the original did, and builds sandbox handles.
import { native, runNative } from "./native.js";
import { DockerSandboxHandle } from "./handle.js";

export class DockerSandboxClient {
  dockerPath;
  #client;

  constructor(options = {}) {
    this.#client = native.clientNew(options);
    this.dockerPath = options.dockerPath ?? "docker";
  }

  async pullImage(options) {
    const token = native.preparePull(this.#client, options);
    options.abortSignal?.throwIfAborted();
    await runNative(token, options.abortSignal);
  }

  async createSandbox(options) {
    const token = native.prepareCreate(this.#client, options);
    const signal = options.abortSignal;
    signal?.throwIfAborted();
    return new DockerSandboxHandle(await runNative(token, signal));
  }

  async resumeSandbox(options) {
    const token = native.prepareResume(this.#client, options);
    options.abortSignal?.throwIfAborted();
    return new DockerSandboxHandle(await runNative(token, options.abortSignal));
  }

  // Every sandbox on the engine (this package's, any process's, the original's): one
  // GET /containers/json with a label filter, read natively.
  async listSandboxes(options = {}) {
    const token = native.prepareListSandboxes(this.#client, options);
    options?.abortSignal?.throwIfAborted();
    return runNative(token, options?.abortSignal);
  }

  // Removes the sandboxes that match (native: see src/lifecycle/sandboxes.c).
  async pruneSandboxes(options = {}) {
    const token = native.preparePruneSandboxes(this.#client, options);
    options?.abortSignal?.throwIfAborted();
    return runNative(token, options?.abortSignal);
  }
}
