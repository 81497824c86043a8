// The terminal tools (lib/terminal-tools.js) against a fake runtime whose terminals are
// scripted (no Docker): policies, schemas, the quiet/maxBytes/deadline ends of a read, offsets
// and dropped bytes, UTF-8 characters never split between reads, the exit status, stop's
// hang-up then kill, abort, and a tool set reaching only its own terminals. The real thing is
// test/integration/terminal-tools.test.js.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { DockerSandboxError } from "../../lib/errors.js";
import { createDockerSandboxTools } from "../../lib/tools.js";
import { utf8Boundary } from "../../lib/terminal-tools.js";

const terminalTools = ["start_terminal", "write_terminal", "read_terminal", "stop_terminal"];

// A terminal whose output is a byte log the test appends to; output() replays from `since`
// (a first offset past it when `dropBefore` says those bytes are gone) and follows until end.
function fakeTerminal(id, { dropBefore = 0, onWrite, onKill } = {}) {
  const log = [];
  let size = 0;
  let ended = null;
  const waiters = new Set();
  const wake = () => {
    for (const w of waiters) w();
    waiters.clear();
  };
  const terminal = {
    id,
    pid: 42,
    writes: [],
    kills: [],
    emit(text) {
      const data = typeof text === "string" ? Buffer.from(text) : Buffer.from(text);
      log.push({ offset: size, data });
      size += data.byteLength;
      wake();
    },
    end(exitCode, signal = null) {
      ended = { exitCode, signal };
      wake();
    },
    async write(data) {
      terminal.writes.push(data);
      onWrite?.(terminal, data);
    },
    async kill(signal) {
      terminal.kills.push(signal);
      onKill?.(terminal, signal);
      return { delivered: true };
    },
    async wait({ abortSignal } = {}) {
      while (ended === null) {
        abortSignal?.throwIfAborted();
        await new Promise((resolve, reject) => {
          waiters.add(resolve);
          abortSignal?.addEventListener("abort", () => reject(abortSignal.reason), { once: true });
        });
      }
      return ended;
    },
    output({ since = 0, abortSignal } = {}) {
      return (async function* () {
        let at = Math.max(since, dropBefore);
        for (;;) {
          abortSignal?.throwIfAborted();
          const chunk = log.find((c) => c.offset <= at && at < c.offset + c.data.byteLength);
          if (chunk !== undefined) {
            const data = chunk.data.subarray(at - chunk.offset);
            yield { offset: at, data };
            at += data.byteLength;
            continue;
          }
          if (ended !== null) return;
          await new Promise((resolve, reject) => {
            waiters.add(resolve);
            abortSignal?.addEventListener("abort", () => reject(abortSignal.reason), { once: true });
          });
        }
      })();
    }
  };
  return terminal;
}

function fakeRuntime({ terminal = (id) => fakeTerminal(id), bash = true } = {}) {
  const calls = [];
  const started = [];
  const runtime = {
    id: "sbx",
    provider: "docker",
    workdir: "/workspace",
    publishedPorts: [],
    calls,
    started,
    exec: async (options) => {
      calls.push(["exec", options]);
      return { status: "exited", exitCode: bash ? 0 : 1, stdout: new Uint8Array(), stderr: new Uint8Array(), durationMs: 1, stdoutTruncated: false, stderrTruncated: false };
    },
    startTerminal: async (options) => {
      calls.push(["startTerminal", options]);
      const t = terminal(`t${started.length + 1}`);
      started.push(t);
      return t;
    }
  };
  for (const name of ["execStream", "readFile", "readTextFile", "readTextFilePage", "writeFile", "writeTextFile", "listFiles", "startProcess", "listProcesses", "readProcessLogs", "stopProcess", "waitForPort"])
    runtime[name] = async () => {
      throw new Error(`${name} is not scripted`);
    };
  return runtime;
}

const tools = (runtime, extra = {}) =>
  Object.fromEntries(createDockerSandboxTools({ sandbox: runtime, tools: terminalTools, ...extra }).map((t) => [t.name, t]));

const isPolicy = (re) => (error) => error instanceof DockerSandboxError && error.code === "tool_policy" && re.test(error.message);

describe("terminal tools", () => {
  test("definition() gives JSON Schemas a strict provider takes", () => {
    const t = tools(fakeRuntime());
    for (const name of terminalTools) {
      const d = t[name].definition("");
      assert.equal(d.name, name);
      assert.equal(d.parameters.type, "object");
      assert.equal(d.parameters.additionalProperties, false);
      assert.equal(d.parameters.$schema, undefined);
    }
    assert.deepEqual(t.write_terminal.definition("").parameters.required, ["terminalId", "input"]);
    assert.deepEqual(t.stop_terminal.definition("").parameters.required, ["terminalId"]);
    assert.equal(t.start_terminal.definition("").parameters.required, undefined);
  });

  test("the factory checks the terminal policy and that the runtime has terminals", () => {
    const runtime = fakeRuntime();
    assert.throws(() => tools(runtime, { terminal: 5 }), { name: "TypeError", message: "terminal must be an object." });
    assert.throws(() => tools(runtime, { terminal: { maxYieldMs: 0 } }), isPolicy(/terminal.maxYieldMs must be an integer from 1 to 300000/));
    assert.throws(() => tools(runtime, { terminal: { maxOutputBytes: 2 * 1024 * 1024 } }), isPolicy(/maxOutputBytes/));
    assert.throws(() => tools(runtime, { terminal: { defaultYieldMs: 50, maxYieldMs: 10 } }), isPolicy(/defaultYieldMs cannot exceed/));
    const { startTerminal: _gone, ...old } = runtime;
    assert.throws(() => createDockerSandboxTools({ sandbox: old, tools: ["read_terminal"] }), {
      name: "TypeError",
      message: "sandbox must have startTerminal for the terminal tools."
    });
    // The ten tools alone do not need terminals.
    assert.equal(createDockerSandboxTools({ sandbox: old, tools: ["exec_command"] }).length, 1);
  });

  test("a scripted turn: the prompt, input and its answer, offsets that continue", async () => {
    const runtime = fakeRuntime({
      terminal: (id) => {
        const t = fakeTerminal(id, {
          onWrite: (term, data) => setImmediate(() => term.emit(`${data}answer\n$ `))
        });
        setImmediate(() => t.emit("$ "));
        return t;
      }
    });
    const t = tools(runtime);
    const started = await t.start_terminal.call({ command: "sh", yieldMs: 50 });
    assert.deepEqual(started, {
      terminalId: "t1",
      pid: 42,
      output: "$ ",
      offset: 0,
      nextOffset: 2,
      droppedBytes: 0,
      outputTruncated: false,
      status: "running"
    });
    assert.deepEqual(runtime.calls.at(-1), ["startTerminal", { command: "sh" }]);
    const turn = await t.write_terminal.call({ terminalId: "t1", input: "ls\n", yieldMs: 50 });
    assert.equal(turn.output, "ls\nanswer\n$ ");
    assert.equal(turn.offset, 2);
    assert.equal(turn.nextOffset, 2 + Buffer.byteLength("ls\nanswer\n$ "));
    // Nothing new: an empty read from where the last ended; `since` reads again.
    const quiet = await t.read_terminal.call({ terminalId: "t1", yieldMs: 20 });
    assert.equal(quiet.output, "");
    assert.equal(quiet.offset, turn.nextOffset);
    assert.equal((await t.read_terminal.call({ terminalId: "t1", since: 0, yieldMs: 20 })).output, "$ ls\nanswer\n$ ");
  });

  test("maxBytes cuts a read, never inside a character; the next read continues", async () => {
    const runtime = fakeRuntime();
    const t = tools(runtime);
    const started = await t.start_terminal.call({ command: "sh", yieldMs: 10 });
    const term = runtime.started[0];
    term.emit("ab€cd"); // € is three bytes: offsets 2..4
    const first = await t.read_terminal.call({ terminalId: started.terminalId, maxBytes: 4, yieldMs: 20 });
    assert.deepEqual([first.output, first.nextOffset, first.outputTruncated], ["ab", 2, true]);
    const second = await t.read_terminal.call({ terminalId: started.terminalId, maxBytes: 4, yieldMs: 20 });
    assert.deepEqual([second.output, second.offset, second.nextOffset], ["€c", 2, 6]);
    // A character cut by the read's quiet end waits for the next read.
    term.emit(Buffer.from([0x64, 0xe2, 0x82]));
    const third = await t.read_terminal.call({ terminalId: started.terminalId, yieldMs: 20 });
    assert.deepEqual([third.output, third.nextOffset], ["dd", 8]);
    term.emit(Buffer.from([0xac]));
    assert.equal((await t.read_terminal.call({ terminalId: started.terminalId, yieldMs: 20 })).output, "€");
  });

  test("bytes gone from the scrollback are counted; an ended terminal gives its exit status", async () => {
    const runtime = fakeRuntime({ terminal: (id) => fakeTerminal(id, { dropBefore: 5 }) });
    const t = tools(runtime);
    await t.start_terminal.call({ command: "sh", yieldMs: 10 });
    const term = runtime.started[0];
    term.emit("0123456789");
    term.end(130, "SIGINT");
    const got = await t.read_terminal.call({ terminalId: "t1", since: 0, yieldMs: 1000 });
    assert.deepEqual(got, {
      terminalId: "t1",
      output: "56789",
      offset: 5,
      nextOffset: 10,
      droppedBytes: 5,
      outputTruncated: false,
      status: "exited",
      exitCode: 130,
      signal: "SIGINT"
    });
  });

  test("a program that never goes quiet ends the read at the policy's maxYieldMs", async () => {
    const runtime = fakeRuntime();
    const t = tools(runtime, { terminal: { maxYieldMs: 200, defaultYieldMs: 100 } });
    await t.start_terminal.call({ command: "sh", yieldMs: 10 });
    const timer = setInterval(() => runtime.started[0].emit("x"), 5);
    try {
      const got = await t.read_terminal.call({ terminalId: "t1" });
      assert.equal(got.status, "running");
      assert.ok(got.output.length > 0 && /^x+$/.test(got.output));
    } finally {
      clearInterval(timer);
    }
  });

  test("policies: yield and output caps, the command policy on the program", async () => {
    const runtime = fakeRuntime();
    const t = tools(runtime, { terminal: { maxYieldMs: 1000, maxOutputBytes: 1024 } });
    await assert.rejects(t.start_terminal.call({ command: "sh", yieldMs: 1001 }), isPolicy(/^Terminal yield exceeds policy \(1001 > 1000\)\.$/));
    await assert.rejects(t.read_terminal.call({ terminalId: "t1", maxBytes: 2048 }), isPolicy(/^Terminal output request exceeds policy \(2048 > 1024\)\.$/));
    const allow = tools(runtime, { exec: { commands: { mode: "allow", values: ["python3", "/bin/bash"] } } });
    // The default program is the sandbox's shell: an allow list must admit shells for it.
    await assert.rejects(allow.start_terminal.call({}), isPolicy(/\/bin\/bash \(shell interpreter not allowed\)/));
    await assert.rejects(allow.start_terminal.call({ command: "node" }), isPolicy(/rejected by sandbox tool policy: node$/));
    await assert.rejects(allow.start_terminal.call({ command: "echo hi | cat" }), isPolicy(/require allowShellInterpreters/));
    const block = tools(runtime, { exec: { commands: { mode: "block", values: ["/bin/bash"] } } });
    await assert.rejects(block.start_terminal.call({}), isPolicy(/rejected by sandbox tool policy: \/bin\/bash$/));
    const shells = tools(runtime, { exec: { commands: { mode: "allow", values: ["/bin/bash"], allowShellInterpreters: true } } });
    await shells.start_terminal.call({ yieldMs: 0, cols: 100, rows: 30, cwd: "/workspace/app" });
    assert.deepEqual(runtime.calls.at(-1), ["startTerminal", { command: "/bin/bash", args: ["-i"], cwd: "app", cols: 100, rows: 30 }]);
    await assert.rejects(shells.start_terminal.call({ command: "sh", cwd: "/etc" }), { code: "invalid_path" });
  });

  test("a tool set reaches only its own terminals", async () => {
    const runtime = fakeRuntime();
    const a = tools(runtime);
    const b = tools(runtime);
    const started = await a.start_terminal.call({ command: "sh", yieldMs: 0 });
    await assert.rejects(b.write_terminal.call({ terminalId: started.terminalId, input: "x" }), {
      code: "process",
      message: `Unknown sandbox terminal: ${started.terminalId}`
    });
    assert.deepEqual(runtime.started[0].writes, []);
  });

  test("stop_terminal hangs up, then kills after the grace period", async () => {
    const runtime = fakeRuntime({
      terminal: (id) =>
        fakeTerminal(id, {
          onKill: (term, signal) => {
            if (signal === "SIGKILL") setImmediate(() => term.end(137, "SIGKILL"));
          }
        })
    });
    const t = tools(runtime, { terminal: { stopGracePeriodMs: 30 } });
    await t.start_terminal.call({ command: "sh", yieldMs: 0 });
    assert.deepEqual(await t.stop_terminal.call({ terminalId: "t1" }), { terminalId: "t1", status: "exited", exitCode: 137, signal: "SIGKILL" });
    assert.deepEqual(runtime.started[0].kills, ["SIGHUP", "SIGKILL"]);
    await assert.rejects(t.read_terminal.call({ terminalId: "t1" }), { code: "process" });
    // One that hangs up at once is not killed.
    const polite = fakeRuntime({ terminal: (id) => fakeTerminal(id, { onKill: (term) => setImmediate(() => term.end(129, "SIGHUP")) }) });
    const p = tools(polite);
    await p.start_terminal.call({ command: "sh", yieldMs: 0 });
    assert.equal((await p.stop_terminal.call({ terminalId: "t1" })).signal, "SIGHUP");
    assert.deepEqual(polite.started[0].kills, ["SIGHUP"]);
  });

  test("an abort ends a read at once with its reason", async () => {
    const runtime = fakeRuntime();
    const t = tools(runtime);
    await t.start_terminal.call({ command: "sh", yieldMs: 0 });
    const controller = new AbortController();
    const reason = new Error("the user stopped it");
    const pending = t.read_terminal.call({ terminalId: "t1", yieldMs: 20000 }, { abortSignal: controller.signal });
    setTimeout(() => controller.abort(reason), 20);
    await assert.rejects(pending, (error) => error === reason);
  });

  test("utf8Boundary", () => {
    const b = Buffer.from("a€");
    assert.equal(utf8Boundary(b, 4), 4);
    assert.equal(utf8Boundary(b, 3), 1);
    assert.equal(utf8Boundary(b, 2), 1);
    assert.equal(utf8Boundary(Buffer.from([0xff, 0x80]), 2), 2); // not UTF-8: left as it is
    assert.equal(utf8Boundary(Buffer.from("😀"), 3), 0);
  });
});
