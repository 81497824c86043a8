// The agent tools' natural command lines and absolute paths on a real engine (issue 22, as
// upstream's docker-shell integration test): brace expansion and `[[ ]]` under /bin/bash on the
// Debian image (whose /bin/sh is dash), `sh` chosen on the busybox-only image, start_process
// with a /bin/bash-only allow list and the opt-in, a sh-only policy that refuses the implicit
// bash but runs an explicit `sh -c`, and tool paths absolute inside the workdir while the
// runtime's own methods stay relative-only. Every sandbox is destroyed, and checked gone.
import test, { after } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { DockerSandboxClient, DockerSandboxError, createDockerSandboxTools } from "../../lib/index.js";
import { BUSYBOX_IMAGE, baseOptions, labelledLeftovers, uniqueId } from "../helpers/docker.js";

const client = new DockerSandboxClient();
const decode = (bytes) => new TextDecoder("utf-8", { fatal: true }).decode(bytes);

const made = [];
async function sandboxFor(t, extra = {}) {
  const sandbox = await client.createSandbox(baseOptions({ id: uniqueId("shell"), ...extra }));
  made.push(sandbox.id);
  t.after(() => sandbox.destroy());
  return sandbox;
}
after(async () => {
  for (const id of made) assert.deepEqual(await labelledLeftovers(id), { containers: [], volumes: [] }, id);
});

function toolsOf(sandbox, names, policy = {}) {
  return Object.fromEntries(createDockerSandboxTools({ sandbox: sandbox.runtime, tools: names, ...policy }).map((t) => [t.name, t]));
}

async function eventually(check, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value || Date.now() > deadline) return value;
    await sleep(100);
  }
}

test("the Debian image: /bin/sh is dash, and natural lines run under /bin/bash", async (t) => {
  const sandbox = await sandboxFor(t, { directories: ["repro"], runtime: { commandTimeoutMs: 10_000, maxOutputBytes: 64_000 } });
  const sh = await sandbox.runtime.exec({ command: "readlink", args: ["-f", "/bin/sh"] });
  assert.equal(decode(sh.stdout).trim(), "/usr/bin/dash");
  const { exec_command: exec } = toolsOf(sandbox, ["exec_command"]);
  const braces = await exec.call({ command: "mkdir -p made/{raw,results} && ls made" });
  assert.deepEqual(braces, {
    status: "exited",
    exitCode: 0,
    stdout: "raw\nresults\n",
    stderr: "",
    durationMs: braces.durationMs,
    stdoutTruncated: false,
    stderrTruncated: false
  });
  const conditional = await exec.call({ command: "[[ -d repro ]] && echo ok" });
  assert.equal(conditional.status, "exited");
  assert.equal(conditional.exitCode, 0);
  assert.equal(conditional.stdout, "ok\n");
  assert.equal(conditional.stderr, "");
  // The caller's cwd, env and input reach the shell's command.
  const shaped = await exec.call({ command: 'echo "$MODE $(pwd)" && cat', cwd: "/workspace/repro", env: { MODE: "m" }, input: "in\n" });
  assert.equal(shaped.stdout, "m /workspace/repro\nin\n");
  // An exact argv is never a command line: no shell, so the braces stay.
  const exact = await exec.call({ command: "echo", args: ["{a,b}"] });
  assert.equal(exact.stdout, "{a,b}\n");
});

test("the busybox-only image: no /bin/bash, so natural lines run under sh", async (t) => {
  const sandbox = await sandboxFor(t, { image: BUSYBOX_IMAGE });
  const bashOnly = toolsOf(sandbox, ["exec_command"], {
    exec: { commands: { mode: "allow", values: ["/bin/bash"], allowShellInterpreters: true } }
  });
  // The detection chose sh: a /bin/bash-only policy refuses it, and does not run anything else.
  await assert.rejects(bashOnly.exec_command.call({ command: "echo {a,b}" }), (error) => {
    assert.ok(error instanceof DockerSandboxError);
    assert.equal(error.code, "tool_policy");
    assert.equal(error.message, "Command is rejected by sandbox tool policy: sh");
    return true;
  });
  const { exec_command: exec } = toolsOf(sandbox, ["exec_command"]);
  // busybox sh has no brace expansion: the word stays as it is.
  const result = await exec.call({ command: "echo {a,b} && test -d . && echo ok" });
  assert.equal(result.status, "exited");
  assert.equal(result.exitCode, 0);
  assert.equal(result.stdout, "{a,b}\nok\n");
  assert.equal(result.stderr, "");
  const shOnly = toolsOf(sandbox, ["start_process"], { exec: { commands: { mode: "allow", values: ["sh"], allowShellInterpreters: true } } });
  const started = await shOnly.start_process.call({ command: "echo started > started.txt" });
  assert.equal(started.command, "sh");
  assert.deepEqual(started.args, ["-c", "echo started > started.txt"]);
  const done = await eventually(async () =>
    (await sandbox.runtime.listProcesses()).find((p) => p.id === started.id && p.status === "exited")
  );
  assert.equal(done?.exitCode, 0);
  assert.equal(await sandbox.runtime.readTextFile({ path: "started.txt" }), "started\n");
});

test("start_process: a /bin/bash-only allow list with the opt-in runs a bash command line", async (t) => {
  const sandbox = await sandboxFor(t);
  const { start_process: start } = toolsOf(sandbox, ["start_process"], {
    exec: { commands: { mode: "allow", values: ["/bin/bash"], allowShellInterpreters: true } }
  });
  const started = await start.call({ command: "mkdir -p repro/{raw,results} && [[ -d repro/raw ]] && echo ok" });
  assert.equal(started.command, "/bin/bash");
  const done = await eventually(async () =>
    (await sandbox.runtime.listProcesses()).find((p) => p.id === started.id && p.status === "exited")
  );
  assert.ok(done, "the process ended");
  assert.equal(done.command, "/bin/bash");
  assert.equal(done.exitCode, 0);
  const logs = await sandbox.runtime.readProcessLogs({ processId: started.id });
  assert.equal(decode(logs.stdout), "ok\n");
  assert.equal(decode(logs.stderr), "");
  assert.deepEqual((await sandbox.runtime.listFiles({ path: "repro" })).map((f) => f.path).sort(), ["repro/raw", "repro/results"]);
  // Without the opt-in the same policy refuses the line before anything runs.
  const closed = toolsOf(sandbox, ["start_process"], { exec: { commands: { mode: "allow", values: ["/bin/bash"] } } });
  await assert.rejects(closed.start_process.call({ command: "echo no" }), {
    code: "tool_policy",
    message: "Natural command lines require allowShellInterpreters: true."
  });
  assert.equal((await sandbox.runtime.listProcesses()).length, 1);
});

test("a sh-only policy refuses the implicit bash and keeps explicit sh -c", async (t) => {
  const sandbox = await sandboxFor(t);
  const { exec_command: exec } = toolsOf(sandbox, ["exec_command"], {
    exec: { commands: { mode: "allow", values: ["sh"], allowShellInterpreters: true } }
  });
  await assert.rejects(exec.call({ command: "echo ready" }), {
    code: "tool_policy",
    message: "Command is rejected by sandbox tool policy: /bin/bash"
  });
  const explicit = await exec.call({ command: "sh", args: ["-c", "printf '%s\\n' repro/{raw,results}"] });
  assert.equal(explicit.status, "exited");
  assert.equal(explicit.exitCode, 0);
  assert.equal(explicit.stdout, "repro/{raw,results}\n");
  assert.equal(explicit.stderr, "");
  // Without the opt-in, listing sh is not enough.
  const closed = toolsOf(sandbox, ["exec_command"], { exec: { commands: { mode: "allow", values: ["sh"] } } });
  await assert.rejects(closed.exec_command.call({ command: "sh", args: ["-c", "true"] }), {
    code: "tool_policy",
    message: "Command is rejected by sandbox tool policy: sh (shell interpreter not allowed)"
  });
});

test("tool paths may be absolute inside the workdir; the runtime's methods stay relative-only", async (t) => {
  const sandbox = await sandboxFor(t);
  const tools = toolsOf(sandbox, ["write_file", "read_file", "list_files", "exec_command"]);
  assert.deepEqual(await tools.write_file.call({ path: "/workspace/app/output.txt", content: "hello\n" }), {
    path: "app/output.txt",
    bytesWritten: 6
  });
  assert.equal((await tools.read_file.call({ path: "/workspace/app/output.txt" })).content, "hello\n");
  assert.deepEqual(await tools.list_files.call({ path: "/workspace/app" }), {
    path: "app",
    entries: [{ path: "app/output.txt", type: "file", size: 6 }]
  });
  assert.equal((await tools.list_files.call({})).path, ".");
  const pwd = await tools.exec_command.call({ command: "pwd", cwd: "/workspace/app" });
  assert.equal(pwd.stdout, "/workspace/app\n");
  await assert.rejects(tools.read_file.call({ path: "/etc/passwd" }), {
    code: "invalid_path",
    message: "Sandbox path cannot leave the workspace: /etc/passwd"
  });
  await assert.rejects(sandbox.runtime.readTextFile({ path: "/workspace/app/output.txt" }), {
    code: "invalid_path",
    message: "Sandbox path must be relative: /workspace/app/output.txt"
  });
});
