// The runtime a handle exposes (handle.runtime): the original's DockerSandboxRuntimeImpl
// with every Docker action done by one native operation. What stays here is the
// original's bookkeeping: the state check, the caller's AbortSignal combined with the
// handle's own (so stop/destroy can cancel everything in flight), and the list of
// operations still running.
import { native, runNative } from "./native.js";
import { assertNonEmptyString, assertNonNegativeSafeInteger, assertOptionsObject, invalidState } from "./util.js";
import { DockerSandboxError, decodeUtf8 } from "./errors.js";
import { prepareExport, prepareImport, runExport, runImport } from "./tree.js";
import { eventQueue } from "./flow.js";
import { attachTerminal, listTerminals, startTerminal } from "./terminal.js";

const STREAM_HIGH_WATER = 256 * 1024;
const STREAM_LOW_WATER = 64 * 1024;
// watchFiles: events waiting for the consumer before the agent is held back (it stops
// reading inotify; the kernel's queue then overflows into one "overflow" event).
const WATCH_HIGH_WATER = 4096;
const WATCH_LOW_WATER = 1024;

export class SandboxRuntime {
  #info;
  #sandbox;
  #state;
  #activeControllers = new Set();
  #activeOperations = new Set();
  #processDisposed = false;
  #tracked = true; // false once the native side says the sandbox has no idle limit

  // The native sandbox token, for the calls made on the runtime's behalf (terminal.js).
  get sandbox() {
    return this.#sandbox;
  }

  constructor(info, state) {
    this.#info = info;
    this.#sandbox = info.sandbox;
    this.#state = state;
  }

  publicRuntime() {
    return {
      id: this.#info.id,
      provider: "docker",
      workdir: this.#info.workdir,
      publishedPorts: Object.freeze(this.#info.publishedPorts.map((port) => Object.freeze({ ...port }))),
      exec: (options) => this.exec(options),
      execStream: (options) => this.execStream(options),
      readFile: (options) => this.readFile(options),
      readTextFile: (options) => this.readTextFile(options),
      readTextFilePage: (options) => this.readTextFilePage(options),
      writeFile: (options) => this.writeFile(options),
      writeTextFile: (options) => this.writeTextFile(options),
      listFiles: (options) => this.listFiles(options),
      startProcess: (options) => this.startProcess(options),
      listProcesses: (options) => this.listProcesses(options),
      readProcessLogs: (options) => this.readProcessLogs(options),
      stopProcess: (options) => this.stopProcess(options),
      waitForPort: (options) => this.waitForPort(options),
      watchFiles: (options) => this.watchFiles(options),
      startTerminal: (options) => startTerminal(this, options),
      attachTerminal: (options) => attachTerminal(this, options),
      listTerminals: (options) => listTerminals(this, options),
      importTree: (source, options) => this.importTree(source, options),
      exportTree: (selection, destination, options) => this.exportTree(selection, destination, options),
    };
  }

  async exec(options) {
    const token = native.prepareExec(this.#sandbox, options);
    return this.run(options.abortSignal, token);
  }

  async readFile(options) {
    const token = native.prepareReadFile(this.#sandbox, options);
    return this.run(options.abortSignal, token);
  }

  async readTextFile(options) {
    return decodeUtf8(await this.readFile(options));
  }

  async readTextFilePage(options) {
    const { startLine, lineCount, maxBytes } = native.textPageOptions(options);
    let readOptions = { path: options.path };
    if (options.abortSignal !== undefined) readOptions = { ...readOptions, abortSignal: options.abortSignal };
    const bytes = await this.readFile(readOptions);
    // null: not UTF-8; decoding throws TextDecoder's own TypeError, as the original did.
    return native.textFilePage(bytes, startLine, lineCount, maxBytes) ?? decodeUtf8(bytes);
  }

  async writeFile(options) {
    const token = native.prepareWriteFile(this.#sandbox, options, false);
    await this.run(options.abortSignal, token);
  }

  async writeTextFile(options) {
    const token = native.prepareWriteFile(this.#sandbox, options, true);
    await this.run(options.abortSignal, token);
  }

  async listFiles(options = {}) {
    const token = native.prepareListFiles(this.#sandbox, options);
    return this.run(options.abortSignal, token);
  }

  // The original's execStream, with back-pressure instead of its "consumer is too slow"
  // error: when more than STREAM_HIGH_WATER bytes wait for the consumer, the native side
  // stops reading the connection (so the command blocks on its output); it reads again
  // once the queue drains below STREAM_LOW_WATER.
  async *execStream(options) {
    const token = native.prepareExec(this.#sandbox, options);
    yield* this.stream(token, options.abortSignal, {
      high: STREAM_HIGH_WATER,
      low: STREAM_LOW_WATER,
      cost: (event) => (event.type === "result" ? 0 : event.data.byteLength),
      event: (type, data) => ({ type, data }),
      result: (result) => ({ type: "result", result }),
    });
  }

  // Changes beneath a directory as they happen (src/runtime/agent_watch.h): create, modify,
  // delete and rename events, and "overflow" when some were lost; it ends when the
  // directory goes away, the signal aborts, or the consumer stops iterating.
  async *watchFiles(options = {}) {
    const token = native.prepareWatchFiles(this.#sandbox, options);
    yield* this.stream(token, options?.abortSignal, {
      high: WATCH_HIGH_WATER,
      low: WATCH_LOW_WATER,
      cost: () => 1,
      event: (type, path, kind) => (type === "overflow" ? { type } : { type, path, kind }),
      result: undefined,
    });
  }

  // A native operation's events as an async iterable, with back-pressure (lib/flow.js):
  // `event` makes an item of the native event's arguments, `result` (if any) one of the
  // operation's result, the last. Closing the iterator early cancels the operation.
  async *stream(token, abortSignal, { high, low, cost, event, result }) {
    this.assertRunning();
    const streamAbort = new AbortController();
    const combined = abortSignal === undefined ? streamAbort.signal : AbortSignal.any([abortSignal, streamAbort.signal]);
    const queue = eventQueue(token, { high, low, cost });
    let complete = false;
    let failure;
    const onEvent = (...args) => queue.push(event(...args));
    const run = this.run(combined, token, onEvent).then((value) => {
      if (result !== undefined) queue.push(result(value));
    });
    void run.then(
      () => {
        complete = true;
        queue.poke();
      },
      (error) => {
        failure = error;
        complete = true;
        queue.poke();
      },
    );
    try {
      while (!complete || queue.length > 0) {
        const item = queue.shift();
        if (item !== undefined) {
          yield item;
          continue;
        }
        await queue.wait();
      }
      if (failure !== undefined) throw failure;
    } finally {
      if (!complete) streamAbort.abort(new DOMException("Stream closed", "AbortError"));
      await run.catch(() => undefined);
    }
  }

  async closeActiveOperations(message) {
    const reason = new DockerSandboxError(message, "invalid_state");
    for (const controller of this.#activeControllers) controller.abort(reason);
    await Promise.allSettled([...this.#activeOperations]);
  }

  // Ends every managed process (stop and destroy call this first, as the original did).
  async disposeProcesses(abortSignal) {
    if (this.#processDisposed) return;
    abortSignal?.throwIfAborted();
    await runNative(native.prepareDisposeProcesses(this.#sandbox), abortSignal);
    this.#processDisposed = true;
  }

  async startProcess(options) {
    const token = native.prepareStartProcess(this.#sandbox, options);
    return this.run(options.abortSignal, token);
  }

  async listProcesses(options = {}) {
    assertOptionsObject(options);
    return this.runOperation(options.abortSignal, async () => native.listProcesses(this.#sandbox));
  }

  async readProcessLogs(options) {
    assertOptionsObject(options);
    assertNonEmptyString(options.processId, "processId");
    if (options.tailBytes !== undefined) assertNonNegativeSafeInteger(options.tailBytes, "tailBytes");
    return this.runOperation(options.abortSignal, async () =>
      native.processLogs(this.#sandbox, options.processId, options.tailBytes),
    );
  }

  async stopProcess(options) {
    const token = native.prepareStopProcess(this.#sandbox, options);
    return this.run(options.abortSignal, token);
  }

  async waitForPort(options) {
    const token = native.prepareWaitForPort(this.#sandbox, options);
    return this.run(options.abortSignal, token);
  }

  // Tree transfers (lib/tree.js, src/runtime/tree_front.h): the arguments are checked first,
  // then the state and the signal, as for every other operation.
  async importTree(source, options = {}) {
    const prepared = prepareImport(this.#sandbox, source, options);
    return this.runOperation(options.abortSignal, (signal) => runImport(prepared, source, options, signal));
  }

  async exportTree(selection, destination, options = {}) {
    const token = prepareExport(this.#sandbox, selection, destination, options);
    return this.runOperation(options.abortSignal, (signal) => runExport(token, selection, destination, options, signal));
  }

  // runOperation of the original: state check, then abort check, then the work, which
  // sees a signal that fires on the caller's abort or on stop/destroy. Runtime operations
  // count as activity for the idle limit (the native side tells the container, see
  // src/lifecycle/lifetime.h); `activity` false is for the handle's own reads (stats).
  async runOperation(abortSignal, operation, activity = true) {
    this.assertRunning();
    abortSignal?.throwIfAborted();
    const controller = new AbortController();
    const effectiveSignal = abortSignal === undefined ? controller.signal : AbortSignal.any([abortSignal, controller.signal]);
    const tracked = activity && this.#tracked && native.sandboxActivity(this.#sandbox, 1);
    if (activity && !tracked) this.#tracked = false;
    let execution;
    try {
      execution = operation(effectiveSignal);
      this.#activeControllers.add(controller);
      this.#activeOperations.add(execution);
      return await execution;
    } finally {
      this.#activeControllers.delete(controller);
      this.#activeOperations.delete(execution);
      if (tracked) native.sandboxActivity(this.#sandbox, -1);
    }
  }

  assertRunning() {
    const current = this.#state();
    if (current !== "running") throw invalidState(this.#info.id, current);
  }

  // Runs a prepared native token as one operation.
  run(abortSignal, token, onEvent, activity = true) {
    return this.runOperation(abortSignal, (signal) => runNative(token, signal, onEvent), activity);
  }
}

