// The tools as upstream ships them after 1.1.3, against a fake runtime (no Docker):
// allowShellInterpreters in allow-mode policies, natural command lines through the sandbox's
// shell (the shared detection: caching, failures, aborts), the policy errors and their order,
// tool paths absolute inside the workdir (the C rule's workdir mode, compared with a model of
// upstream's normalizeSandboxPath), and env values kept out of every error.
import assert from "node:assert/strict";
import path from "node:path";
import { describe, test } from "node:test";
import { isDeepStrictEqual } from "node:util";
import { setImmediate as tick } from "node:timers/promises";

import { DockerSandboxError } from "../../lib/errors.js";
import { native } from "../../lib/native.js";
import { shellInterpreters } from "../../lib/shell.js";
import { createDockerSandboxTools } from "../../lib/tools.js";

const PROBE = Object.freeze({ command: "sh", args: ["-c", "test -x /bin/bash"], timeoutMs: 5000 });
const encode = (text) => new TextEncoder().encode(text);

function exited(exitCode = 0, stdout = "") {
  return {
    status: "exited",
    exitCode,
    stdout: encode(stdout),
    stderr: new Uint8Array(),
    durationMs: 1,
    stdoutTruncated: false,
    stderrTruncated: false
  };
}

const processInfo = Object.freeze({
  id: "proc-1",
  command: "node",
  args: Object.freeze([]),
  status: "running",
  startedAt: "2026-01-01T00:00:00.000Z"
});

function isProbe(options) {
  return options.command === "sh" && options.args?.[0] === "-c" && options.args?.[1] === "test -x /bin/bash";
}

// A runtime double: every method name answers (so it passes the factory's shape check), is
// recorded, and returns what `answers` says (undefined for the rest). `probe` answers the
// shell detection: a function of the probe's number (1 for the first) that returns a result
// or a promise, or throws.
function fakeRuntime({ probe = () => exited(0), workdir = "/workspace" } = {}) {
  const calls = [];
  let probes = 0;
  const answers = {
    exec: (options) => (isProbe(options) ? probe(++probes) : exited(0, "ran\n")),
    readTextFilePage: (options) => ({
      content: "",
      startLine: options.startLine,
      endLine: null,
      nextStartLine: null,
      truncated: false,
      truncatedBy: null
    }),
    listFiles: () => [],
    startProcess: () => processInfo,
    listProcesses: () => [],
    readProcessLogs: () => ({ stdout: new Uint8Array(), stderr: new Uint8Array(), stdoutTruncated: false, stderrTruncated: false }),
    stopProcess: () => processInfo,
    waitForPort: (options) => ({ containerPort: options.containerPort, host: "127.0.0.1", hostPort: 1, protocol: "tcp" })
  };
  const methods = new Map();
  const method = (name) => async (options) => {
    calls.push({ method: name, options });
    return answers[name]?.(options);
  };
  const state = { id: "sbx-1", provider: "docker", workdir, publishedPorts: [] };
  const runtime = new Proxy(state, {
    get: (target, key) => {
      if (key in target || typeof key !== "string") return target[key];
      if (!methods.has(key)) methods.set(key, method(key));
      return methods.get(key);
    }
  });
  const probeCalls = () => calls.filter((call) => call.method === "exec" && isProbe(call.options));
  const userCalls = () => calls.filter((call) => !(call.method === "exec" && isProbe(call.options)));
  return { runtime, calls, probeCalls, userCalls };
}

function tool(runtime, name, policy = {}) {
  return createDockerSandboxTools({ sandbox: runtime, tools: [name], ...policy })[0];
}

function sandboxError(code, message) {
  return (error) => {
    assert.ok(error instanceof DockerSandboxError, `expected DockerSandboxError, got ${error}`);
    assert.equal(error.code, code);
    assert.equal(error.message, message);
    return true;
  };
}
const policyError = (message) => sandboxError("tool_policy", message);
const pathError = (message) => sandboxError("invalid_path", message);

const allow = (values, allowShellInterpreters) => ({
  exec: {
    commands:
      allowShellInterpreters === undefined
        ? { mode: "allow", values }
        : { mode: "allow", values, allowShellInterpreters }
  }
});
const block = (values) => ({ exec: { commands: { mode: "block", values } } });
const runner = { exec_command: "exec", start_process: "startProcess" };

describe("allowShellInterpreters", () => {
  test("must be a boolean in an allow-mode policy: the factory throws tool_policy", () => {
    for (const value of ["false", "true", "", 0, 1, null, {}, [], Number.NaN]) {
      const { runtime, calls } = fakeRuntime();
      assert.throws(
        () =>
          createDockerSandboxTools({
            sandbox: runtime,
            tools: ["exec_command", "start_process"],
            exec: { commands: { mode: "allow", values: ["sh"], allowShellInterpreters: value } }
          }),
        policyError("exec.commands.allowShellInterpreters must be a boolean."),
        String(value)
      );
      assert.equal(calls.length, 0);
    }
    // Whatever tools are selected, as every policy check.
    const { runtime } = fakeRuntime();
    assert.throws(
      () => createDockerSandboxTools({ sandbox: runtime, tools: ["list_ports"], ...allow([], "yes") }),
      policyError("exec.commands.allowShellInterpreters must be a boolean.")
    );
  });

  test("checked after the mode and before the values", () => {
    const { runtime } = fakeRuntime();
    const cases = [
      [{ mode: "deny", values: [], allowShellInterpreters: 1 }, "exec.commands must use mode allow or block."],
      [{ mode: "allow", allowShellInterpreters: 1 }, "exec.commands.allowShellInterpreters must be a boolean."],
      [{ mode: "allow", values: ["", ""], allowShellInterpreters: "x" }, "exec.commands.allowShellInterpreters must be a boolean."],
      [{ mode: "allow", values: "sh", allowShellInterpreters: true }, "exec.commands.values must be an array."]
    ];
    for (const [commands, message] of cases) {
      assert.throws(() => createDockerSandboxTools({ sandbox: runtime, tools: ["exec_command"], exec: { commands } }), policyError(message));
    }
  });

  test("a block-mode policy ignores the key, whatever its value", async () => {
    const { runtime, userCalls } = fakeRuntime();
    const exec = tool(runtime, "exec_command", { exec: { commands: { mode: "block", values: ["rm"], allowShellInterpreters: "yes" } } });
    await exec.call({ command: "sh", args: ["-c", "echo hi"] });
    assert.deepEqual(userCalls()[0].options, { command: "sh", args: ["-c", "echo hi"] });
  });

  test("the policy is a snapshot: changing the caller's flag afterwards changes nothing", async () => {
    const { runtime, userCalls } = fakeRuntime();
    const opened = { mode: "allow", values: ["sh"], allowShellInterpreters: true };
    const closed = { mode: "allow", values: ["sh"], allowShellInterpreters: false };
    const unset = { mode: "allow", values: ["sh"] };
    const [openTool] = createDockerSandboxTools({ sandbox: runtime, tools: ["exec_command"], exec: { commands: opened } });
    const [closedTool] = createDockerSandboxTools({ sandbox: runtime, tools: ["exec_command"], exec: { commands: closed } });
    const [unsetTool] = createDockerSandboxTools({ sandbox: runtime, tools: ["exec_command"], exec: { commands: unset } });
    opened.allowShellInterpreters = false;
    closed.allowShellInterpreters = true;
    unset.allowShellInterpreters = true;
    await openTool.call({ command: "sh", args: ["-c", "true"] });
    const refused = policyError("Command is rejected by sandbox tool policy: sh (shell interpreter not allowed)");
    await assert.rejects(closedTool.call({ command: "sh", args: ["-c", "true"] }), refused);
    await assert.rejects(unsetTool.call({ command: "sh", args: ["-c", "true"] }), refused);
    assert.equal(userCalls().length, 1);
  });

  for (const name of ["exec_command", "start_process"]) {
    test(`${name}: every listed shell, bare or path-qualified, is refused unless the flag is true`, async () => {
      assert.deepEqual(shellInterpreters, ["sh", "bash", "zsh", "ksh", "dash", "ash", "busybox", "fish", "csh", "tcsh"]);
      const commands = shellInterpreters.flatMap((shell) => [shell, `/bin/${shell}`, `/usr/local/bin/${shell}`, `./${shell}`]);
      for (const flag of [undefined, false]) {
        const { runtime, calls } = fakeRuntime();
        const t = tool(runtime, name, allow(commands, flag));
        for (const command of commands) {
          await assert.rejects(
            t.call({ command, args: ["-c", "echo hello"] }),
            policyError(`Command is rejected by sandbox tool policy: ${command} (shell interpreter not allowed)`)
          );
        }
        assert.equal(calls.length, 0, "nothing ran");
      }
      const { runtime, calls } = fakeRuntime();
      const t = tool(runtime, name, allow(commands, true));
      for (const command of commands) await t.call({ command, args: ["-c", "echo hello"] });
      assert.deepEqual(
        calls.map((call) => [call.method, call.options]),
        commands.map((command) => [runner[name], { command, args: ["-c", "echo hello"] }])
      );
    });

    test(`${name}: the exact allow-list check comes first, with its own message`, async () => {
      const { runtime, calls } = fakeRuntime();
      const t = tool(runtime, name, allow(["node"]));
      await assert.rejects(t.call({ command: "sh", args: ["-c", "x"] }), policyError("Command is rejected by sandbox tool policy: sh"));
      await assert.rejects(t.call({ command: "/bin/bash", args: [] }), policyError("Command is rejected by sandbox tool policy: /bin/bash"));
      assert.equal(calls.length, 0);
    });

    test(`${name}: only the basename counts, and only an exact interpreter name`, async () => {
      const { runtime, calls } = fakeRuntime();
      const values = ["bash5", "shells", "sh.exe", "bin/sh/", "/opt/sh-tools/run", "SH", "node"];
      const t = tool(runtime, name, allow(values));
      for (const command of values) await t.call({ command, args: [] });
      assert.deepEqual(
        calls.map((call) => call.options.command),
        values
      );
    });

    test(`${name}: a block-mode policy does not refuse shells it does not list`, async () => {
      const { runtime, calls } = fakeRuntime();
      const t = tool(runtime, name, block(["rm", "bash"]));
      await t.call({ command: "sh", args: ["-c", "echo hello"] });
      await assert.rejects(t.call({ command: "bash", args: ["-c", "x"] }), policyError("Command is rejected by sandbox tool policy: bash"));
      assert.deepEqual(calls.map((call) => call.options), [{ command: "sh", args: ["-c", "echo hello"] }]);
    });
  }
});

describe("natural command lines", () => {
  test("which commands are natural lines: shell characters or white space, and no args", async () => {
    const natural = [
      "echo hi", "a|b", "a&b", "a;b", "a<b", "a>b", "(a)", "$HOME", "`a`", "'a'", '"a"', "a*", "a?", "[a]", "{a,b}",
      "!a", "#a", "~", "A=1", "a\tb", "a\nb", "a\rb", "a\u000bb", "a\u000cb", "a\u00a0b", "a\u2003b", "a\u2028b",
      "a\u3000b", "a\ufeffb", "uv run --with pandas python - <<'PY'\nprint('ready')\nPY"
    ];
    const plain = ["ls", "/usr/bin/env", "node-18", "a.b", "x+y", "a@b", "100%", "a^b", "a,b", "a:b", "é", "😀", "a\\b", "a/b"];
    for (const command of natural) {
      const { runtime, userCalls, probeCalls } = fakeRuntime();
      await tool(runtime, "exec_command").call({ command });
      assert.equal(probeCalls().length, 1, JSON.stringify(command));
      assert.deepEqual(userCalls()[0].options, { command: "/bin/bash", args: ["-c", command] }, JSON.stringify(command));
    }
    for (const command of plain) {
      const { runtime, calls } = fakeRuntime();
      await tool(runtime, "exec_command").call({ command });
      assert.deepEqual(calls.map((call) => call.options), [{ command }], JSON.stringify(command));
    }
  });

  for (const name of ["exec_command", "start_process"]) {
    test(`${name}: args, even an empty array, is an exact argv: no shell, no detection`, async () => {
      const { runtime, calls } = fakeRuntime();
      const t = tool(runtime, name);
      await t.call({ command: "an executable with spaces", args: [] });
      await t.call({ command: "echo $HOME", args: ["x"] });
      assert.deepEqual(
        calls.map((call) => [call.method, call.options]),
        [
          [runner[name], { command: "an executable with spaces", args: [] }],
          [runner[name], { command: "echo $HOME", args: ["x"] }]
        ]
      );
    });

    test(`${name}: /bin/bash -c when the probe finds bash, sh -c when it does not`, async () => {
      for (const [exitCode, shell] of [
        [0, "/bin/bash"],
        [1, "sh"]
      ]) {
        const { runtime, calls } = fakeRuntime({ probe: () => exited(exitCode) });
        const controller = new AbortController();
        const t = tool(runtime, name);
        const args = { command: "mkdir -p repro/{raw,results} && ls repro", cwd: "app", env: { MODE: "test" } };
        await t.call(args, { abortSignal: controller.signal });
        // The probe is fixed: none of the caller's cwd, env or signal goes into it.
        assert.deepEqual(calls[0], { method: "exec", options: PROBE });
        assert.deepEqual(calls[1], {
          method: runner[name],
          options: { command: shell, args: ["-c", args.command], cwd: "app", env: { MODE: "test" }, abortSignal: controller.signal }
        });
        assert.equal(calls.length, 2);
      }
    });

    test(`${name}: a block-mode policy refuses natural lines before any detection`, async () => {
      const { runtime, calls } = fakeRuntime();
      await assert.rejects(
        tool(runtime, name, block(["rm"])).call({ command: "rm -rf output" }),
        policyError("Natural command lines cannot be used with block-mode command policies. Use command and args instead.")
      );
      // Even one whose shell is not blocked: the policy cannot judge a command line.
      await assert.rejects(tool(runtime, name, block([])).call({ command: "echo ok" }), { code: "tool_policy" });
      assert.equal(calls.length, 0);
    });

    test(`${name}: an allow-mode policy needs allowShellInterpreters: true before any detection`, async () => {
      for (const flag of [undefined, false]) {
        const { runtime, calls } = fakeRuntime();
        await assert.rejects(
          tool(runtime, name, allow(["/bin/bash", "sh"], flag)).call({ command: "echo hello" }),
          policyError("Natural command lines require allowShellInterpreters: true.")
        );
        assert.equal(calls.length, 0);
      }
    });

    test(`${name}: the chosen shell passes the policy under its exact name, and a refusal is final`, async () => {
      // Bash is there but only sh is allowed: refused, no fallback to sh.
      const bashThere = fakeRuntime();
      const shOnly = tool(bashThere.runtime, name, allow(["sh"], true));
      await assert.rejects(shOnly.call({ command: "echo hello" }), policyError("Command is rejected by sandbox tool policy: /bin/bash"));
      assert.deepEqual(bashThere.calls, [{ method: "exec", options: PROBE }]);
      // Explicit sh -c still works under that policy.
      await shOnly.call({ command: "sh", args: ["-c", "echo hello"] });
      assert.deepEqual(bashThere.calls.at(-1), { method: runner[name], options: { command: "sh", args: ["-c", "echo hello"] } });

      // No bash, only /bin/bash allowed: sh is refused.
      const noBash = fakeRuntime({ probe: () => exited(1) });
      await assert.rejects(
        tool(noBash.runtime, name, allow(["/bin/bash"], true)).call({ command: "echo hello" }),
        policyError("Command is rejected by sandbox tool policy: sh")
      );
      assert.equal(noBash.calls.length, 1);

      // "bash" is not "/bin/bash".
      const named = fakeRuntime();
      await assert.rejects(
        tool(named.runtime, name, allow(["bash"], true)).call({ command: "echo hello" }),
        policyError("Command is rejected by sandbox tool policy: /bin/bash")
      );

      // Allowed: runs.
      const allowed = fakeRuntime();
      await tool(allowed.runtime, name, allow(["/bin/bash"], true)).call({ command: "uv run report.py" });
      assert.deepEqual(allowed.calls.at(-1).options, { command: "/bin/bash", args: ["-c", "uv run report.py"] });
    });
  }

  test("exec_command keeps the caller's timeout and input on the shell", async () => {
    const { runtime, userCalls } = fakeRuntime();
    await tool(runtime, "exec_command", { exec: { defaultTimeoutMs: 1234 } }).call({ command: "cat > a.txt", input: "data" });
    assert.deepEqual(userCalls()[0].options, { command: "/bin/bash", args: ["-c", "cat > a.txt"], timeoutMs: 1234, input: "data" });
  });
});

describe("the shell detection", () => {
  test("one probe per runtime object, shared by concurrent calls, both tools and every factory", async () => {
    const { runtime, probeCalls, userCalls } = fakeRuntime();
    const exec = tool(runtime, "exec_command");
    const start = tool(runtime, "start_process");
    await Promise.all([exec.call({ command: "echo first" }), start.call({ command: "echo second" }), exec.call({ command: "echo third" })]);
    await exec.call({ command: "echo fourth" });
    await tool(runtime, "exec_command").call({ command: "echo fifth" });
    assert.equal(probeCalls().length, 1);
    assert.equal(userCalls().length, 5);
    // A policy refusal does not touch the cache either.
    await assert.rejects(tool(runtime, "exec_command", allow(["sh"], true)).call({ command: "echo no" }), { code: "tool_policy" });
    assert.equal(probeCalls().length, 1);

    // Another runtime object (the same sandbox id) detects again.
    const other = fakeRuntime();
    other.runtime.id = runtime.id;
    await tool(other.runtime, "exec_command").call({ command: "echo other" });
    assert.equal(other.probeCalls().length, 1);
  });

  const failures = [
    ["exit 2", () => exited(2), sandboxError("docker_command_failed", "Could not detect the sandbox shell.")],
    ["exit 127", () => exited(127), sandboxError("docker_command_failed", "Could not detect the sandbox shell.")],
    ["exit -1", () => exited(-1), sandboxError("docker_command_failed", "Could not detect the sandbox shell.")],
    [
      "timed out",
      () => ({ ...exited(0), status: "timed_out", exitCode: undefined }),
      sandboxError("timeout", "Sandbox shell detection timed out.")
    ]
  ];
  for (const [label, answer, expected] of failures) {
    test(`a failed probe (${label}) is an error, not a missing bash, and is not cached`, async () => {
      const { runtime, probeCalls, userCalls } = fakeRuntime({ probe: (n) => (n === 1 ? answer() : exited(0)) });
      const t = tool(runtime, "exec_command");
      await assert.rejects(t.call({ command: "echo hello" }), expected);
      assert.equal(userCalls().length, 0);
      await t.call({ command: "echo retried" });
      assert.equal(probeCalls().length, 2);
      assert.deepEqual(userCalls()[0].options, { command: "/bin/bash", args: ["-c", "echo retried"] });
    });
  }

  test("a rejected probe passes its error through unchanged, and is not cached", async () => {
    const failure = new DockerSandboxError("Sandbox is not running.", "invalid_state");
    const { runtime, probeCalls } = fakeRuntime({
      probe: (n) => {
        if (n === 1) throw failure;
        return exited(1);
      }
    });
    const t = tool(runtime, "start_process");
    await assert.rejects(t.call({ command: "echo a" }), (error) => error === failure);
    await t.call({ command: "echo b" });
    assert.equal(probeCalls().length, 2);
  });

  test("every caller waiting on a failed probe gets its error; the next call probes again", async () => {
    let fail;
    const { runtime, probeCalls, userCalls } = fakeRuntime({
      probe: (n) => (n === 1 ? new Promise((_, reject) => (fail = reject)) : exited(0))
    });
    const t = tool(runtime, "exec_command");
    const first = t.call({ command: "echo 1" });
    const second = t.call({ command: "echo 2" });
    await tick();
    const failure = new Error("engine went away");
    fail(failure);
    await assert.rejects(first, (error) => error === failure);
    await assert.rejects(second, (error) => error === failure);
    await t.call({ command: "echo 3" });
    assert.equal(probeCalls().length, 2);
    assert.equal(userCalls().length, 1);
  });

  test("a caller's abort rejects only that caller, with signal.reason, and the probe goes on", async () => {
    let finish;
    const { runtime, calls, probeCalls, userCalls } = fakeRuntime({
      probe: () => new Promise((resolve) => (finish = resolve))
    });
    const t = tool(runtime, "exec_command");
    const controller = new AbortController();
    const cancelled = t.call({ command: "echo cancelled" }, { abortSignal: controller.signal });
    const waiting = t.call({ command: "echo successful" });
    await tick();
    assert.equal(calls.length, 1, "the probe is in flight");
    assert.equal("abortSignal" in calls[0].options, false, "the probe carries no caller's signal");
    const reason = new Error("cancelled");
    controller.abort(reason);
    await assert.rejects(cancelled, (error) => error === reason);
    assert.equal(calls.length, 1);
    finish(exited(0));
    await waiting;
    assert.equal(probeCalls().length, 1);
    assert.deepEqual(
      userCalls().map((call) => call.options),
      [{ command: "/bin/bash", args: ["-c", "echo successful"] }]
    );
    // The result was kept for the next caller.
    await t.call({ command: "echo again" });
    assert.equal(probeCalls().length, 1);
  });

  test("an abort without a reason rejects with the signal's AbortError; an aborted caller of a later-failing probe leaves nothing unhandled", async (t) => {
    let fail;
    const { runtime } = fakeRuntime({ probe: () => new Promise((_, reject) => (fail = reject)) });
    const unhandled = [];
    const onUnhandled = (error) => unhandled.push(error);
    process.on("unhandledRejection", onUnhandled);
    t.after(() => process.off("unhandledRejection", onUnhandled));
    const start = tool(runtime, "start_process");
    const controller = new AbortController();
    const call = start.call({ command: "sleep 1 && echo x" }, { abortSignal: controller.signal });
    await tick();
    controller.abort();
    await assert.rejects(call, (error) => error === controller.signal.reason && error.name === "AbortError");
    fail(new Error("late failure"));
    await tick();
    await tick();
    assert.deepEqual(unhandled, []);
  });

  test("an abort that lands as the probe settles still stops the call before the command runs", async () => {
    let finish;
    const { runtime, userCalls } = fakeRuntime({ probe: () => new Promise((resolve) => (finish = resolve)) });
    const controller = new AbortController();
    const reason = new Error("late abort");
    const call = tool(runtime, "exec_command").call({ command: "echo x" }, { abortSignal: controller.signal });
    await tick();
    finish(exited(0));
    controller.abort(reason);
    await assert.rejects(call, (error) => error === reason);
    assert.equal(userCalls().length, 0);
  });

  test("an abort just after the shell is known still stops the call before the command runs", async () => {
    // The signal aborts when the wait on the detection lets go of it: after the shell is
    // chosen, before the command would start.
    const { runtime, probeCalls, userCalls } = fakeRuntime();
    const controller = new AbortController();
    const reason = new Error("aborted after detection");
    const { signal } = controller;
    signal.removeEventListener = function (...args) {
      controller.abort(reason);
      return AbortSignal.prototype.removeEventListener.apply(this, args);
    };
    await assert.rejects(tool(runtime, "exec_command").call({ command: "echo x" }, { abortSignal: signal }), (e) => e === reason);
    assert.equal(probeCalls().length, 1);
    assert.equal(userCalls().length, 0);
  });

  test("an already aborted signal rejects before any detection", async () => {
    const { runtime, calls } = fakeRuntime();
    const reason = new Error("stop");
    await assert.rejects(tool(runtime, "exec_command").call({ command: "echo x" }, { abortSignal: AbortSignal.abort(reason) }), (e) => e === reason);
    assert.equal(calls.length, 0);
  });
});

describe("the order of the checks", () => {
  const env = { SECRET: "v" };
  test("exec_command: timeout policy, then cwd, then the command (rc.10 checked the command first)", async () => {
    const { runtime, calls } = fakeRuntime();
    const policy = { exec: { commands: { mode: "allow", values: ["node"] }, maxTimeoutMs: 1000 } };
    const t = tool(runtime, "exec_command", policy);
    await assert.rejects(
      t.call({ command: "rm", cwd: "/etc", timeoutMs: 2000, env }),
      policyError("Command timeout exceeds policy (2000 > 1000).")
    );
    await assert.rejects(t.call({ command: "rm", cwd: "/etc", env }), pathError("Sandbox path cannot leave the workspace: /etc"));
    await assert.rejects(t.call({ command: "rm", cwd: "", env }), pathError("Sandbox path cannot be empty."));
    await assert.rejects(t.call({ command: "rm", cwd: "app" }), policyError("Command is rejected by sandbox tool policy: rm"));
    // A natural line: the cwd before the block-mode or opt-in refusal, both before any probe.
    const blocked = tool(runtime, "exec_command", block([]));
    await assert.rejects(blocked.call({ command: "echo x", cwd: "../up" }), pathError("Sandbox path cannot leave the workspace: ../up"));
    await assert.rejects(blocked.call({ command: "echo x", cwd: "/workspace/app" }), { code: "tool_policy" });
    const optIn = tool(runtime, "exec_command", allow(["/bin/bash"]));
    await assert.rejects(optIn.call({ command: "echo x", cwd: "a\0" }), pathError("Sandbox path cannot contain null bytes."));
    await assert.rejects(optIn.call({ command: "echo x", timeoutMs: 5 }), policyError("Natural command lines require allowShellInterpreters: true."));
    // Timeout before the natural-line refusal.
    const bounded = tool(runtime, "exec_command", { exec: { commands: { mode: "block", values: [] }, maxTimeoutMs: 10 } });
    await assert.rejects(bounded.call({ command: "echo x", timeoutMs: 11 }), policyError("Command timeout exceeds policy (11 > 10)."));
    assert.equal(calls.length, 0);
  });

  test("start_process: cwd, then the command", async () => {
    const { runtime, calls } = fakeRuntime();
    const t = tool(runtime, "start_process", allow(["node"]));
    await assert.rejects(t.call({ command: "rm", cwd: "/tmp" }), pathError("Sandbox path cannot leave the workspace: /tmp"));
    await assert.rejects(t.call({ command: "rm", cwd: "/workspace" }), policyError("Command is rejected by sandbox tool policy: rm"));
    assert.equal(calls.length, 0);
  });

  test("read_file and write_file: their size policies, then the path", async () => {
    const { runtime, calls } = fakeRuntime();
    const read = tool(runtime, "read_file", { readFile: { defaultLineCount: 5, maxLineCount: 10 } });
    await assert.rejects(read.call({ path: "/etc/passwd", lineCount: 11 }), policyError("File read line count exceeds policy (11 > 10)."));
    await assert.rejects(read.call({ path: "/etc/passwd" }), pathError("Sandbox path cannot leave the workspace: /etc/passwd"));
    const write = tool(runtime, "write_file", { writeFile: { maxBytes: 1 } });
    await assert.rejects(write.call({ path: "/etc/passwd", content: "xx" }), policyError("File content exceeds policy (2 > 1)."));
    await assert.rejects(write.call({ path: "/etc/passwd", content: "x" }), pathError("Sandbox path cannot leave the workspace: /etc/passwd"));
    assert.equal(calls.length, 0);
  });
});

describe("tool paths", () => {
  test("absolute paths inside the workdir reach the runtime as canonical relative paths", async () => {
    const { runtime, calls } = fakeRuntime();
    const tools = Object.fromEntries(
      createDockerSandboxTools({
        sandbox: runtime,
        tools: ["exec_command", "read_file", "write_file", "list_files", "start_process"]
      }).map((t) => [t.name, t])
    );
    await tools.exec_command.call({ command: "node", cwd: "/workspace/app" });
    await tools.exec_command.call({ command: "node", cwd: "/workspace" });
    await tools.exec_command.call({ command: "node", cwd: "./app//src/../" });
    await tools.read_file.call({ path: "/workspace/app/input.txt" });
    assert.deepEqual(await tools.write_file.call({ path: "/workspace/app/output.txt", content: "hello" }), {
      path: "app/output.txt",
      bytesWritten: 5
    });
    assert.deepEqual(await tools.write_file.call({ path: "./a.txt", content: "" }), { path: "a.txt", bytesWritten: 0 });
    assert.deepEqual(await tools.write_file.call({ path: "dir\\b.txt", content: "" }), { path: "dir/b.txt", bytesWritten: 0 });
    assert.deepEqual(await tools.list_files.call({ path: "/workspace/app" }), { path: "app", entries: [] });
    assert.deepEqual(await tools.list_files.call({ path: "/workspace/" }), { path: ".", entries: [] });
    assert.deepEqual(await tools.list_files.call({}), { path: ".", entries: [] });
    assert.deepEqual(await tools.list_files.call({ path: "src/" }), { path: "src/", entries: [] });
    await tools.start_process.call({ command: "node", cwd: "/workspace/app" });
    assert.deepEqual(
      calls.map((call) => [call.method, call.options]),
      [
        ["exec", { command: "node", cwd: "app" }],
        ["exec", { command: "node", cwd: "." }],
        ["exec", { command: "node", cwd: "app/" }],
        ["readTextFilePage", { path: "app/input.txt", startLine: 1, lineCount: 500, maxBytes: 65536 }],
        ["writeTextFile", { path: "app/output.txt", text: "hello" }],
        ["writeTextFile", { path: "a.txt", text: "" }],
        ["writeTextFile", { path: "dir/b.txt", text: "" }],
        ["listFiles", { path: "app" }],
        ["listFiles", { path: "." }],
        ["listFiles", {}],
        ["listFiles", { path: "src/" }],
        ["startProcess", { command: "node", cwd: "app" }]
      ]
    );
  });

  test("the sandbox's own workdir decides, read at each call", async () => {
    const { runtime, calls } = fakeRuntime({ workdir: "/home/user/project/" });
    const write = tool(runtime, "write_file");
    assert.equal((await write.call({ path: "/home/user/project/src/x.js", content: "" })).path, "src/x.js");
    await assert.rejects(write.call({ path: "/workspace/x.js", content: "" }), pathError("Sandbox path cannot leave the workspace: /workspace/x.js"));
    runtime.workdir = "/";
    assert.equal((await write.call({ path: "/etc/x", content: "" })).path, "etc/x");
    assert.equal(calls.length, 2);
  });

  test("invalid paths are invalid_path with upstream's messages, before the runtime", async () => {
    const { runtime, calls } = fakeRuntime();
    const [exec, read, write, list, start] = createDockerSandboxTools({
      sandbox: runtime,
      tools: ["exec_command", "read_file", "write_file", "list_files", "start_process"]
    });
    const cases = [
      [read, { path: "/etc/passwd" }, "Sandbox path cannot leave the workspace: /etc/passwd"],
      [read, { path: "/workspace-other/secret" }, "Sandbox path cannot leave the workspace: /workspace-other/secret"],
      [read, { path: "/workspace/../etc" }, "Sandbox path cannot leave the workspace: /workspace/../etc"],
      [read, { path: "../secret" }, "Sandbox path cannot leave the workspace: ../secret"],
      [read, { path: "/workspace" }, "Sandbox path must refer to a file or directory inside the workspace."],
      [read, { path: "a/.." }, "Sandbox path must refer to a file or directory inside the workspace."],
      [read, { path: "bad\0path" }, "Sandbox path cannot contain null bytes."],
      [write, { path: "/", content: "" }, "Sandbox path cannot leave the workspace: /"],
      [write, { path: "/workspace/", content: "" }, "Sandbox path must refer to a file or directory inside the workspace."],
      [write, { path: "\\etc\\shadow", content: "" }, "Sandbox path cannot leave the workspace: \\etc\\shadow"],
      [list, { path: "" }, "Sandbox path cannot be empty."],
      [list, { path: "/proc" }, "Sandbox path cannot leave the workspace: /proc"],
      [exec, { command: "ls", cwd: "/" }, "Sandbox path cannot leave the workspace: /"],
      [start, { command: "ls", cwd: ".." }, "Sandbox path cannot leave the workspace: .."]
    ];
    for (const [t, args, message] of cases) await assert.rejects(t.call(args), pathError(message), JSON.stringify(args));
    assert.equal(calls.length, 0);
  });

  test("a workdir that is not absolute accepts no absolute path (upstream: must be relative)", async () => {
    for (const workdir of ["workspace", "", "./w"]) {
      const { runtime } = fakeRuntime({ workdir });
      await assert.rejects(tool(runtime, "read_file").call({ path: "/workspace/a" }), pathError("Sandbox path must be relative: /workspace/a"));
      await tool(runtime, "read_file").call({ path: "a" });
    }
  });

  test("the runtime's own rule is unchanged: relative only", () => {
    assert.throws(() => native.normalizeSandboxPath("/workspace/a", false), pathError("Sandbox path must be relative: /workspace/a"));
    assert.throws(() => native.normalizeSandboxPath("/workspace/a", false, undefined), pathError("Sandbox path must be relative: /workspace/a"));
    assert.throws(() => native.normalizeSandboxPath("/workspace/a", false, 7), pathError("Sandbox path must be relative: /workspace/a"));
    assert.equal(native.normalizeSandboxPath("/workspace/a", false, "/workspace"), "a");
  });
});

// upstream's normalizeSandboxPath(input, { allowRoot, workdir }), written from its description
// with node:path, to compare the C workdir mode against.
function upstreamToolPath(input, allowRoot, workdir) {
  const invalid = (message) => new DockerSandboxError(message, "invalid_path");
  if (input.length === 0) throw invalid("Sandbox path cannot be empty.");
  if (input.includes("\0")) throw invalid("Sandbox path cannot contain null bytes.");
  let normalized = path.posix.normalize(input.replaceAll("\\", "/"));
  if (path.posix.isAbsolute(normalized)) {
    if (workdir === undefined || !path.posix.isAbsolute(workdir)) throw invalid(`Sandbox path must be relative: ${input}`);
    normalized = path.posix.relative(path.posix.normalize(workdir), normalized) || ".";
  }
  if (normalized === ".." || normalized.startsWith("../")) throw invalid(`Sandbox path cannot leave the workspace: ${input}`);
  if (normalized === "." && allowRoot !== true) {
    throw invalid("Sandbox path must refer to a file or directory inside the workspace.");
  }
  return normalized;
}

function outcome(fn) {
  try {
    return { value: fn() };
  } catch (error) {
    return { threw: error.constructor.name, code: error.code, message: error.message };
  }
}

// Every string of at most `n` pieces.
function* joinings(pieces, n, prefix = "") {
  yield prefix;
  if (n > 0) for (const piece of pieces) yield* joinings(pieces, n - 1, prefix + piece);
}

describe("the C workdir mode matches upstream's rule", () => {
  const workdirs = ["/workspace", "/workspace/", "/", "//w//x/../", "/home/é", "/a/b/c", "workspace", "", "/w\0x"];
  const pieces = ["a", "workspace", "é", ".", "/", "\\"];
  test("on fixed cases and every short path in and around each workdir, allowRoot on and off", () => {
    process.chdir("/"); // posix.relative of two absolute paths never consults it, but be sure
    const fixed = [
      "/workspace", "/workspace/", "/workspace/.", "/workspace/..", "/workspace/a/../b", "/workspace-other/x", "/workspacex",
      "/", "//", "/..", "/../workspace/a", "\\workspace\\a", "/home/é/ü", "/home/éx", "/a/b/c/d", "/a/b", "./a", "a",
      "..", "", "a\0", "/w\0x/y",
    ];
    // Four pieces after the heads of the main workdir, three after the others'.
    let compared = 0;
    for (const [i, workdir] of workdirs.entries()) {
      const tails = [...joinings(pieces, i === 0 ? 4 : 3)];
      const corpus = [...fixed, ...["", "/", workdir, `${workdir}/`].flatMap((head) => tails.map((tail) => head + tail))];
      for (const input of corpus) {
        for (const allowRoot of [false, true]) {
          const ours = outcome(() => native.normalizeSandboxPath(input, allowRoot, workdir));
          const theirs = outcome(() => upstreamToolPath(input, allowRoot, workdir));
          if (!isDeepStrictEqual(ours, theirs)) {
            assert.deepEqual(ours, theirs, `${JSON.stringify(input)} in ${JSON.stringify(workdir)}, allowRoot ${allowRoot}`);
          }
          compared++;
        }
      }
    }
    assert.ok(compared > 25000, String(compared));
  });
});

describe("env values stay out of errors", () => {
  test("no tool error, message or details, names an env value", async () => {
    const secret = "sk-do-not-show-7731";
    const env = { OPENAI_API_KEY: secret, OTHER: `x${secret}` };
    const failingProbe = fakeRuntime({ probe: () => exited(3) });
    const timedOutProbe = fakeRuntime({ probe: () => ({ ...exited(0), status: "timed_out" }) });
    const plain = fakeRuntime();
    const attempts = [
      [plain.runtime, "exec_command", { exec: { maxTimeoutMs: 1 } }, { command: "node", env, timeoutMs: 2 }],
      [plain.runtime, "exec_command", {}, { command: "node", env, cwd: "/etc" }],
      [plain.runtime, "exec_command", allow(["node"]), { command: "python", env }],
      [plain.runtime, "exec_command", allow(["sh"]), { command: "sh", args: ["-c", "env"], env }],
      [plain.runtime, "exec_command", allow(["sh"]), { command: "env | grep KEY", env }],
      [plain.runtime, "exec_command", block(["env"]), { command: "env", env }],
      [plain.runtime, "start_process", block([]), { command: "echo $OPENAI_API_KEY", env }],
      [plain.runtime, "start_process", allow(["sh"], true), { command: "echo $OPENAI_API_KEY", env }],
      [failingProbe.runtime, "exec_command", {}, { command: "echo $OPENAI_API_KEY", env }],
      [timedOutProbe.runtime, "start_process", {}, { command: "echo $OPENAI_API_KEY", env, cwd: "app" }]
    ];
    for (const [runtime, name, policy, args] of attempts) {
      const error = await tool(runtime, name, policy).call(args).then(
        () => assert.fail(`${JSON.stringify(args.command)} should have failed`),
        (e) => e
      );
      assert.ok(error instanceof DockerSandboxError, String(error));
      const shown = [error.message, String(error), JSON.stringify(error.details ?? null), JSON.stringify(error), String(error.cause ?? "")];
      for (const text of shown) assert.ok(!text.includes(secret), `${name} ${JSON.stringify(args.command)}: ${text}`);
    }
    assert.equal(plain.userCalls().length, 0);
  });
});
