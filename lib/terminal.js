// Terminals (src/runtime/agent_term.c): a program in a pty inside the sandbox, held by a
// keeper process there, so it outlives this handle and this Node process; on the engine
// path (src/runtime/engine_term.c) a Tty exec this process holds, ended with it. A terminal
// handle holds only the terminal's id and its program's pid; each method is one native
// call on the runtime (state check, abort signal, activity), and output() streams with
// the runtime's back-pressure: while it is held back, the keeper stops reading the pty
// (on the engine path, the addon stops reading the exec's stream).
import { native } from "./native.js";
import { assertOptionsObject } from "./util.js";

// output(): bytes waiting for the consumer before the agent is held back.
const OUTPUT_HIGH_WATER = 256 * 1024;
const OUTPUT_LOW_WATER = 64 * 1024;

const prepare = (runtime, options, action) => native.prepareTerminal(runtime.sandbox, options, action);

export class SandboxTerminal {
  #runtime;
  id;
  pid;

  constructor(runtime, { id, pid }) {
    this.#runtime = runtime;
    this.id = id;
    this.pid = pid;
  }

  // Input, as raw bytes (a string is sent as UTF-8); resolves once it is in the terminal.
  async write(data, options = {}) {
    assertOptionsObject(options);
    return this.#runtime.run(options.abortSignal, prepare(this.#runtime, { id: this.id, data }, "write"));
  }

  async resize({ cols, rows, abortSignal } = {}) {
    return this.#runtime.run(abortSignal, prepare(this.#runtime, { id: this.id, cols, rows }, "resize"));
  }

  // The output from byte `since` (default 0) as { offset, data } chunks, then live until
  // the terminal ends. A first offset past `since` says those bytes are gone.
  output({ since, abortSignal } = {}) {
    const token = prepare(this.#runtime, { id: this.id, since }, "output");
    return this.#runtime.stream(token, abortSignal, {
      high: OUTPUT_HIGH_WATER,
      low: OUTPUT_LOW_WATER,
      cost: (chunk) => chunk.data.byteLength,
      event: (offset, data) => ({ offset, data }),
      result: undefined,
    });
  }

  // { exitCode, signal } once the program has exited (exitCode 128 + n for a signal n).
  async wait({ abortSignal } = {}) {
    return this.#runtime.run(abortSignal, prepare(this.#runtime, { id: this.id }, "wait"));
  }

  // Signals the program's session and its descendants (default SIGKILL).
  async kill(signal, { abortSignal } = {}) {
    return this.#runtime.run(abortSignal, prepare(this.#runtime, { id: this.id, signal }, "signal"));
  }
}

export async function startTerminal(runtime, options = {}) {
  assertOptionsObject(options);
  const started = await runtime.run(options.abortSignal, prepare(runtime, options, "start"));
  return new SandboxTerminal(runtime, started);
}

export async function attachTerminal(runtime, options) {
  assertOptionsObject(options);
  const attached = await runtime.run(options.abortSignal, prepare(runtime, { id: options.id }, "attach"));
  return new SandboxTerminal(runtime, attached);
}

export async function listTerminals(runtime, options = {}) {
  assertOptionsObject(options);
  return runtime.run(options.abortSignal, prepare(runtime, {}, "list"));
}
