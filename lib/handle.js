// The sandbox handle: the original's state machine (running, stopping, stopped,
// destroying, destroyed, error), its handling of concurrent stop/destroy calls, and the
// read-only inspector. Every Docker action is one native operation.
import { native, runNative } from "./native.js";
import { SandboxRuntime } from "./runtime.js";
import { invalidState, isRecord } from "./util.js";

export class DockerSandboxHandle {
  id;
  runtime;
  #state = "running";
  #sandbox;
  #workdir;
  #containerRuntime;
  #runtimeImpl;
  #stopPromise;
  #destroyPromise;

  constructor(info) {
    this.#sandbox = info.sandbox;
    this.#workdir = info.workdir;
    this.#containerRuntime = info.containerRuntime;
    this.id = info.id;
    this.#runtimeImpl = new SandboxRuntime(info, () => this.#state);
    this.runtime = Object.freeze(this.#runtimeImpl.publicRuntime());
  }

  get state() {
    return this.#state;
  }

  inspector(options) {
    if (!isRecord(options)) throw new TypeError("options must be an object.");
    if (options.files !== true && options.ports !== true && options.processes !== true) {
      throw new TypeError("Sandbox inspector must enable at least one capability.");
    }
    let inspector = { id: this.id, provider: "docker", workdir: this.#workdir, containerRuntime: this.#containerRuntime };
    if (options.files === true) {
      inspector = {
        ...inspector,
        listFiles: this.runtime.listFiles.bind(this.runtime),
        readFile: this.runtime.readFile.bind(this.runtime),
      };
    }
    if (options.ports === true) inspector = { ...inspector, publishedPorts: this.runtime.publishedPorts };
    if (options.processes === true) {
      inspector = {
        ...inspector,
        listProcesses: this.runtime.listProcesses.bind(this.runtime),
        readProcessLogs: this.runtime.readProcessLogs.bind(this.runtime),
      };
    }
    return Object.freeze(inspector);
  }

  async stop(options = {}) {
    if (!isRecord(options)) throw new TypeError("options must be an object.");
    if (this.#state === "stopped") return;
    if (this.#state === "destroyed" || this.#state === "destroying") throw invalidState(this.id, this.#state);
    if (this.#stopPromise !== undefined) return this.#stopPromise;
    this.#stopPromise = this.#performStop(options.abortSignal);
    try {
      await this.#stopPromise;
    } finally {
      this.#stopPromise = undefined;
    }
  }

  async #performStop(abortSignal) {
    abortSignal?.throwIfAborted();
    this.#state = "stopping";
    try {
      await this.#runtimeImpl.closeActiveOperations("Sandbox is stopping.");
      await this.#runtimeImpl.disposeProcesses(abortSignal);
      await runNative(native.prepareStopContainer(this.#sandbox), abortSignal);
      this.#state = "stopped";
    } catch (error) {
      this.#state = "error";
      throw error;
    }
  }

  async destroy() {
    if (this.#state === "destroyed") return;
    if (this.#destroyPromise !== undefined) return this.#destroyPromise;
    this.#destroyPromise = this.#performDestroy();
    try {
      await this.#destroyPromise;
    } finally {
      this.#destroyPromise = undefined;
    }
  }

  async #performDestroy() {
    if (this.#stopPromise !== undefined) await this.#stopPromise.catch(() => undefined);
    this.#state = "destroying";
    const failures = [];
    const attempt = async (step) => {
      try {
        await step();
      } catch (error) {
        failures.push(error);
      }
    };
    await attempt(() => this.#runtimeImpl.closeActiveOperations("Sandbox is being destroyed."));
    await attempt(() => this.#runtimeImpl.disposeProcesses());
    await attempt(() => runNative(native.prepareRemoveContainer(this.#sandbox)));
    if (native.sandboxOwnsVolume(this.#sandbox)) {
      await attempt(() => runNative(native.prepareRemoveVolume(this.#sandbox)));
    }
    // A fork's own image (after its container: the engine keeps an image in use).
    const image = native.prepareRemoveOwnedImage(this.#sandbox);
    if (image !== undefined) await attempt(() => runNative(image));
    if (failures.length > 0) {
      this.#state = "error";
      throw new AggregateError(failures, `Unable to destroy sandbox: ${this.id}`);
    }
    this.#state = "destroyed";
  }

  // One sample of the container's resource use and its workspace's disk use (native:
  // src/lifecycle/stats.c). Not a runtime operation: it does not count as activity.
  async stats(options = {}) {
    const token = native.prepareStats(this.#sandbox, options);
    return this.#runtimeImpl.run(options.abortSignal, token, undefined, false);
  }

  // A new, independent sandbox from this one's current state (native:
  // src/lifecycle/fork.c). It counts as activity of this sandbox.
  async fork(options = {}) {
    const token = native.prepareFork(this.#sandbox, options);
    return new DockerSandboxHandle(await this.#runtimeImpl.run(options.abortSignal, token));
  }

  async [Symbol.asyncDispose]() {
    await this.destroy();
  }
}
