// The terminal tools on a real engine (lib/terminal-tools.js over runtime.startTerminal): a
// scripted model turn drives a REPL (sh, and bash as the default program) through
// write_terminal, one call per turn, as a model would: set a variable, compute with it,
// interrupt a sleep with Ctrl-C, and end the session. Every call's answer is checked the way a
// model reads it: the output text and the offset to continue from.
//
// Nothing waits on a timer for the program: a call that misses its output (a slow machine)
// reads on with read_terminal until the text is there, so the test never depends on speed.
import test, { after, describe } from "node:test";
import assert from "node:assert/strict";
import { DockerSandboxClient, createDockerSandboxTools } from "../../lib/index.js";
import { baseOptions } from "../helpers/docker.js";

const client = new DockerSandboxClient();
const sandboxes = [];
after(() => Promise.allSettled(sandboxes.map((s) => s.destroy())));

async function toolsFor(policy = {}) {
  const sandbox = await client.createSandbox(baseOptions());
  sandboxes.push(sandbox);
  const list = createDockerSandboxTools({
    sandbox: sandbox.runtime,
    tools: ["start_terminal", "write_terminal", "read_terminal", "stop_terminal"],
    ...policy
  });
  return Object.fromEntries(list.map((t) => [t.name, t]));
}

// One model turn: the call, then reads until `re` is in the text this turn produced.
async function turn(tools, call, re) {
  const first = await call();
  let text = first.output;
  let last = first;
  while (!re.test(text)) {
    assert.equal(last.status, "running", `the terminal ended before ${re}: ${JSON.stringify(text.slice(-300))}`);
    const next = await tools.read_terminal.call({ terminalId: first.terminalId, yieldMs: 200 });
    assert.equal(next.offset, last.nextOffset, "a read continues where the one before ended");
    last = next;
    text += last.output;
  }
  return { text, last };
}

describe("terminal tools drive a REPL", { timeout: 120000 }, () => {
  test("sh, turn by turn: a variable, arithmetic, ^C, exit", async () => {
    const tools = await toolsFor();
    const started = await tools.start_terminal.call({ command: "sh", yieldMs: 300 });
    assert.equal(started.status, "running");
    assert.ok(started.pid > 0);
    const id = started.terminalId;
    let offset = started.nextOffset;
    const step = async (input, re) => {
      const r = await turn(tools, () => tools.write_terminal.call({ terminalId: id, input, yieldMs: 300 }), re);
      assert.ok(r.last.nextOffset > offset, "the output moves on");
      offset = r.last.nextOffset;
      return r.text;
    };
    // The patterns match what the shell printed, not the echo of what was typed.
    await step("x=41\n", /x=41/);
    assert.match(await step("echo $((x + 1))-answer\n", /\n42-answer/), /42-answer/);
    await step("sleep 100; echo not-interrupted\n", /sleep 100/);
    await step("\u0003", /\^C|\n/);
    assert.match(await step("echo alive-$((x * 2))\n", /\nalive-82/), /alive-82/);
    // The whole session is still in the scrollback, from offset 0.
    const again = await tools.read_terminal.call({ terminalId: id, since: 0, yieldMs: 100, maxBytes: 65536 });
    assert.equal(again.offset, 0);
    assert.match(again.output, /42-answer[\s\S]*alive-82/);
    assert.doesNotMatch(again.output, /\nnot-interrupted/);
    const { last } = await turn(tools, () => tools.write_terminal.call({ terminalId: id, input: "exit 7\n", yieldMs: 300 }), /exit 7/);
    let end = last;
    while (end.status === "running") end = await tools.read_terminal.call({ terminalId: id, yieldMs: 200 });
    assert.equal(end.exitCode, 7);
    assert.equal(end.signal, null);
    assert.deepEqual(await tools.stop_terminal.call({ terminalId: id }), { terminalId: id, status: "exited", exitCode: 7, signal: null });
  });

  test("the default program is the sandbox's shell; stop_terminal ends it", async () => {
    const tools = await toolsFor({ exec: { commands: { mode: "allow", values: ["/bin/bash"], allowShellInterpreters: true } } });
    const started = await tools.start_terminal.call({ yieldMs: 300 });
    const id = started.terminalId;
    await turn(tools, () => tools.write_terminal.call({ terminalId: id, input: 'echo "shell=$BASH_VERSION" | tr 0-9 N\n', yieldMs: 300 }), /shell=N/);
    const stopped = await tools.stop_terminal.call({ terminalId: id });
    assert.equal(stopped.status, "exited");
    assert.ok(stopped.signal === "SIGHUP" || stopped.signal === "SIGKILL" || stopped.exitCode === 129, JSON.stringify(stopped));
    await assert.rejects(tools.read_terminal.call({ terminalId: id }), { code: "process" });
  });

  test("the command policy refuses before anything starts", async () => {
    const tools = await toolsFor({ exec: { commands: { mode: "allow", values: ["cat"] } } });
    await assert.rejects(tools.start_terminal.call({}), { code: "tool_policy", message: /rejected by sandbox tool policy: \/bin\/bash$/ });
    await assert.rejects(tools.start_terminal.call({ command: "sh" }), { code: "tool_policy", message: /: sh$/ });
    const shells = await toolsFor({ exec: { commands: { mode: "allow", values: ["/bin/bash"] } } });
    await assert.rejects(shells.start_terminal.call({}), { code: "tool_policy", message: /bash \(shell interpreter not allowed\)$/ });
  });
});
