// The runtime a handle exposes (handle.runtime): the original's DockerSandboxRuntimeImpl
// with every Docker action done by one native operation. What stays here is the
// original's bookkeeping: the state check, the caller's AbortSignal combined with the
// handle's own (so stop/destroy can cancel everything in flight), and the list of
// operations still running.
import { native, runNative } from "./native.js";
import { invalidState } from "./util.js";
import { DockerSandboxError } from "./errors.js";

export class SandboxRuntime {
  #info;
  #state;
  #activeControllers = new Set();
  #activeOperations = new Set();

  constructor(info, state) {
    this.#info = info;
    this.#state = state;
  }

  publicRuntime() {
    return {
      id: this.#info.id,
      provider: "docker",
      workdir: this.#info.workdir,
      publishedPorts: Object.freeze(this.#info.publishedPorts.map((port) => Object.freeze({ ...port }))),
    };
  }

  async closeActiveOperations(message) {
    const reason = new DockerSandboxError(message, "invalid_state");
    for (const controller of this.#activeControllers) controller.abort(reason);
    await Promise.allSettled([...this.#activeOperations]);
  }

  async disposeProcesses() {}

  // runOperation of the original: state check, then abort check, then the work, which
  // sees a signal that fires on the caller's abort or on stop/destroy.
  async runOperation(abortSignal, operation) {
    this.assertRunning();
    abortSignal?.throwIfAborted();
    const controller = new AbortController();
    const effectiveSignal = abortSignal === undefined ? controller.signal : AbortSignal.any([abortSignal, controller.signal]);
    const execution = operation(effectiveSignal);
    this.#activeControllers.add(controller);
    this.#activeOperations.add(execution);
    try {
      return await execution;
    } finally {
      this.#activeControllers.delete(controller);
      this.#activeOperations.delete(execution);
    }
  }

  assertRunning() {
    const current = this.#state();
    if (current !== "running") throw invalidState(this.#info.id, current);
  }

  // Runs a prepared native token as one operation.
  run(abortSignal, token, onEvent) {
    return this.runOperation(abortSignal, (signal) => runNative(token, signal, onEvent));
  }
}

