// NUL bytes in what becomes a command's argument (issue 13, item 3). The original put
// commands, arguments, env pairs, labels, the user and the image into a docker CLI
// argument array, and Node's child_process.spawn refused any argument holding a NUL with
// its own TypeError (ERR_INVALID_ARG_VALUE, naming the argument's position). Here they
// reach the engine as JSON strings where a NUL would cut them short, so the same error is
// raised instead: same class, code and message (and Node's own toString), in the place
// the original raised it (after its validation, state and abort checks), before any I/O.
//
// The expected errors are made the way the original made them: the original's argument
// arrays (copied from the seed's execArgs, createExecArgs and createRunArgs) handed to
// Node's spawn. A fake engine (in this process) serves the handles; no Docker is needed.
import test from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import path from "node:path";
import { DockerSandboxClient, createDockerSandboxTools } from "../../lib/index.js";
import { DockerSandboxError, fakeSandbox, startFakeEngine } from "../helpers/fake-engine.js";

// ---- the original's argument arrays (seed: dist/index.js) -------------------------------------

const processLauncher = [
  'wrapper="$1"',
  "shift",
  "if command -v setsid >/dev/null 2>&1 && setsid -w true >/dev/null 2>&1; then",
  '  exec setsid -w sh -c "$wrapper" "$@"',
  "fi",
  'exec sh -c "$wrapper" "$@"',
].join("\n");
const processWrapper = "(the wrapper script)";

function containerPath(workdir, relative) {
  const normalized = path.posix.normalize(relative);
  return normalized === "." ? path.posix.normalize(workdir) : path.posix.join(path.posix.normalize(workdir), normalized);
}

function execArgs(containerName, options, workdir = "/workspace") {
  const args = ["exec"];
  if (options.input !== undefined) args.push("-i");
  args.push("-w", containerPath(workdir, options.cwd ?? "."));
  for (const [key, value] of Object.entries(options.env ?? {})) args.push("-e", `${key}=${value}`);
  args.push(containerName, options.command, ...(options.args ?? []));
  return args;
}

function createExecArgs(containerName, sandboxEnv, options, workdir = "/workspace") {
  const args = ["exec", "-i", "-w", containerPath(workdir, options.cwd ?? ".")];
  for (const [key, value] of Object.entries({ ...sandboxEnv, ...options.env })) args.push("-e", `${key}=${value}`);
  args.push(containerName, "sh", "-c", processLauncher, "anvia-process-launcher", processWrapper, "anvia-managed-process", "ANVIA_PROCESS:id", options.command, ...(options.args ?? []));
  return args;
}

function createRunArgs(options) {
  const labelPrefix = "anvia.sandbox.";
  const runtimeLabels = Object.fromEntries(
    // Upstream 1.1.2 added container-runtime to rc.10's ten.
    ["schema", "id", "workdir", "workspace.type", "workspace.volume", "network.mode", "runtime.command-timeout-ms", "runtime.max-output-bytes", "runtime.max-file-bytes", "runtime.max-processes", "container-runtime"].map((k) => [labelPrefix + k, "v"]),
  );
  const args = ["run", "-d", "--name", "anvia-sandbox-x", "--mount", "type=volume,src=v,dst=/workspace", "-w", "/workspace"];
  for (const [key, value] of Object.entries({ ...(options.labels ?? {}), ...runtimeLabels })) args.push("--label", `${key}=${value}`);
  for (const [key, value] of Object.entries(options.env ?? {})) args.push("--env", `${key}=${value}`);
  if (options.user !== undefined) args.push("--user", options.user);
  if (options.network.mode === "none") args.push("--network", "none");
  else for (const port of options.network.ports ?? []) args.push("--publish", `127.0.0.1::${port}/tcp`);
  if (options.resources?.memoryMb !== undefined) args.push("--memory", `${options.resources.memoryMb}m`);
  if (options.resources?.cpus !== undefined) args.push("--cpus", `${options.resources.cpus}`);
  if (options.resources?.pidsLimit !== undefined) args.push("--pids-limit", `${options.resources.pidsLimit}`);
  if (options.resources?.sharedMemoryMb !== undefined) args.push("--shm-size", `${options.resources.sharedMemoryMb}m`);
  if (options.security?.readonlyRootfs === true) args.push("--read-only");
  if (options.security?.noNewPrivileges ?? true) args.push("--security-opt", "no-new-privileges:true");
  if (options.security?.seccompProfile !== undefined) args.push("--security-opt", `seccomp=${options.security.seccompProfile.path}`);
  for (const capability of options.security?.dropCapabilities ?? ["ALL"]) args.push("--cap-drop", capability);
  for (const capability of options.security?.addCapabilities ?? []) args.push("--cap-add", capability);
  if (options.containerRuntime !== undefined && options.containerRuntime !== "default") args.push("--runtime", options.containerRuntime);
  args.push(options.image, "sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done");
  return args;
}

/** What the original's spawn threw for this argument array (it must throw: the array holds a NUL). */
function spawnError(args) {
  try {
    const child = spawn("/nonexistent/anvia-test-docker", args, { stdio: "ignore" });
    child.on("error", () => undefined);
  } catch (error) {
    return error;
  }
  throw new Error(`the reference array holds no NUL: ${JSON.stringify(args)}`);
}

function sameError(expected) {
  return (error) => {
    assert.equal(error.constructor, TypeError, `class of ${error}`);
    assert.equal(error.code, "ERR_INVALID_ARG_VALUE");
    assert.equal(error.message, expected.message);
    assert.equal(String(error), String(expected));
    assert.deepEqual(Object.keys(error), Object.keys(expected));
    return true;
  };
}

async function drain(iterable) {
  for await (const event of iterable) void event;
}

const NAME = "anvia-sandbox-nul";

// ---- exec and execStream ----------------------------------------------------------------------

const execCases = [
  ["an argument", { command: "echo", args: ["a\0b"] }],
  ["an argument, with input (-i)", { command: "echo", args: ["x", "a\0b"], input: "in" }],
  ["the command", { command: "ec\0ho", args: ["a"] }],
  ["an env value", { command: "echo", env: { A: "1", B: "x\0y" } }],
  ["an env value before a bad argument", { command: "echo", env: { B: "\0" }, args: ["\0"] }],
  ["the command before a bad argument", { command: "\0", args: ["\0"] }],
  ["a long argument (inspected, cut at 128)", { command: "echo", args: ["y".repeat(300) + "\0"] }],
  ["an argument with quotes and other controls", { command: "echo", args: ["it's \"q\"\n\t\x1b\u00e9\ud83d\ude00\ud800\0"] }],
  ["a cwd and env with both", { command: "echo", cwd: "sub/dir", env: { A: "1" }, args: ["\0"] }],
];

for (const [name, options] of execCases) {
  test(`exec: a NUL in ${name} is Node's TypeError at the original's position, with no request`, async (t) => {
    const { fake, runtime } = await fakeSandbox(t, { id: "nul" });
    const before = fake.requests.length;
    const expected = spawnError(execArgs(NAME, options));
    await assert.rejects(runtime.exec(options), sameError(expected));
    await assert.rejects(drain(runtime.execStream(options)), sameError(expected));
    assert.equal(fake.requests.length, before, "no request was made");
  });
}

test("exec: the original's positions, as numbers", async (t) => {
  const { runtime } = await fakeSandbox(t, { id: "nul" });
  const at = async (options, n) =>
    assert.rejects(runtime.exec(options), { message: new RegExp(`^The argument 'args\\[${n}\\]' must be a string without null bytes\\. Received `) });
  await at({ command: "echo", args: ["a\0b"] }, 5);
  await at({ command: "echo", args: ["a\0b"], input: "" }, 6);
  await at({ command: "ec\0ho" }, 4);
  await at({ command: "echo", env: { A: "1", B: "x\0y" }, args: ["\0"] }, 6);
  await at({ command: "echo", env: { A: "1", B: "2" }, args: ["ok", "\0"] }, 10);
});

test("exec: the original's validation, state and abort checks come first; paths keep their own message", async (t) => {
  const { fake, runtime, sandbox } = await fakeSandbox(t, { id: "nul" });
  const nul = { command: "echo", args: ["\0"] };
  await assert.rejects(runtime.exec({ ...nul, timeoutMs: 0 }), { name: "RangeError", message: "timeoutMs must be a positive safe integer." });
  await assert.rejects(runtime.exec({ ...nul, input: 5 }), { message: "input must be a string or Uint8Array." });
  await assert.rejects(runtime.exec({ ...nul, env: { "A\0": "x" } }), { name: "TypeError", message: /^Invalid environment variable name: A/ });
  await assert.rejects(runtime.exec({ ...nul, env: { A: 5 } }), { message: "env.A must be a string." });
  await assert.rejects(runtime.exec({ ...nul, cwd: "a\0b" }), (e) => e instanceof DockerSandboxError && e.code === "invalid_path" && e.message === "Sandbox path cannot contain null bytes.");
  await assert.rejects(runtime.exec({ ...nul, abortSignal: AbortSignal.abort("why") }), (e) => e === "why");
  const before = fake.requests.length;
  await sandbox.stop();
  await assert.rejects(runtime.exec(nul), (e) => e instanceof DockerSandboxError && e.code === "invalid_state");
  await assert.rejects(drain(runtime.execStream(nul)), (e) => e instanceof DockerSandboxError && e.code === "invalid_state");
  assert.equal(fake.requests.filter((r) => r.path.endsWith("/exec")).length, fake.requests.slice(0, before).filter((r) => r.path.endsWith("/exec")).length);
});

test("exec: the exec_command tool (an LLM's arguments) gets the same error, with no request", async (t) => {
  const { fake, runtime } = await fakeSandbox(t, { id: "nul" });
  const [tool] = createDockerSandboxTools({ sandbox: runtime, tools: ["exec_command"] });
  const before = fake.requests.length;
  await assert.rejects(tool.call({ command: "echo", args: ["a\0b"], env: { X: "1" } }, {}), sameError(spawnError(execArgs(NAME, { command: "echo", args: ["a\0b"], env: { X: "1" } }))));
  assert.equal(fake.requests.length, before);
});

// ---- startProcess ---------------------------------------------------------------------------

const startCases = [
  ["an argument", { command: "sleep", args: ["1", "a\0b"] }],
  ["the command", { command: "sl\0eep" }],
  ["an env value", { command: "sleep", env: { A: "\0" }, args: ["\0"] }],
  ["an argument with a cwd", { command: "sleep", cwd: "d", args: ["\0"] }],
];

for (const [name, options] of startCases) {
  test(`startProcess: a NUL in ${name} is Node's TypeError at the launcher's position, with no request`, async (t) => {
    const { fake, runtime } = await fakeSandbox(t, { id: "nul" });
    const before = fake.requests.length;
    await assert.rejects(runtime.startProcess(options), sameError(spawnError(createExecArgs(NAME, {}, options))));
    assert.equal(fake.requests.length, before, "no request was made");
  });
}

test("startProcess: positions count the sandbox's env merged with the call's; a blank command is refused first", async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  const client = new DockerSandboxClient({ host: fake.host });
  const sandboxEnv = { A: "1", B: "2" };
  const sandbox = await client.createSandbox({ id: "nulenv", image: "fake:latest", workspace: { type: "ephemeral" }, network: { mode: "none" }, env: sandboxEnv });
  const before = fake.requests.length;
  // C is new (after A and B), B overrides in place: B's NUL comes first in the merged order.
  const options = { command: "sleep", env: { C: "x\0", B: "y\0" } };
  const expected = spawnError(createExecArgs("anvia-sandbox-nulenv", sandboxEnv, options));
  assert.match(expected.message, /'args\[7\]'/);
  await assert.rejects(sandbox.runtime.startProcess(options), sameError(expected));
  const fresh = { command: "sleep", env: { C: "ok" }, args: ["\0"] };
  await assert.rejects(sandbox.runtime.startProcess(fresh), sameError(spawnError(createExecArgs("anvia-sandbox-nulenv", sandboxEnv, fresh))));
  await assert.rejects(sandbox.runtime.startProcess({ command: " \t", args: ["\0"] }), (e) => e instanceof DockerSandboxError && e.message === "Sandbox process command cannot be empty.");
  assert.equal(fake.requests.length, before, "no request was made");
});

// ---- createSandbox and pullImage ------------------------------------------------------------------

const base = { image: "fake:latest", workspace: { type: "ephemeral" }, network: { mode: "none" } };

const createCases = [
  ["a label value", { ...base, labels: { a: "1", b: "x\0" } }],
  ["a label key", { ...base, labels: { "k\0": "v" } }],
  ["an env value", { ...base, labels: { a: "1" }, env: { A: "1", B: "\0" } }],
  ["the user", { ...base, env: { A: "1" }, user: "u\0" }],
  ["a dropped capability", { ...base, user: "u", security: { dropCapabilities: ["A", "B\0"] } }],
  ["an added capability", { ...base, network: { mode: "bridge", ports: [80, 81] }, resources: { memoryMb: 1, cpus: 0.5, pidsLimit: 5, sharedMemoryMb: 2 }, security: { readonlyRootfs: true, noNewPrivileges: false, addCapabilities: ["NET_ADMIN", "\0"] } }],
  ["a label before the env and the user", { ...base, labels: { x: "\0" }, env: { A: "\0" }, user: "\0" }],
  ["an added capability, under another runtime", { ...base, containerRuntime: "runsc", security: { addCapabilities: ["\0"] } }],
];

for (const [name, options] of createCases) {
  test(`createSandbox: a NUL in ${name} is Node's TypeError at docker run's position, with no request`, async (t) => {
    const fake = await startFakeEngine();
    t.after(() => fake.close());
    const client = new DockerSandboxClient({ host: fake.host });
    await assert.rejects(client.createSandbox(options), sameError(spawnError(createRunArgs(options))));
    assert.equal(fake.requests.length, 0, "no request was made");
  });
}

test("createSandbox: a NUL in the image is args[2] of `docker image inspect`, before any in docker run's arguments", async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  const client = new DockerSandboxClient({ host: fake.host });
  const expected = spawnError(["image", "inspect", "img\0"]);
  await assert.rejects(client.createSandbox({ ...base, image: "img\0" }), sameError(expected));
  await assert.rejects(client.createSandbox({ ...base, image: "img\0", labels: { a: "\0" } }), sameError(expected));
  // An image the engine cannot know comes next, then docker run's arguments.
  await assert.rejects(client.createSandbox({ ...base, image: "Bad Image", labels: { a: "\0" } }), (e) => e instanceof DockerSandboxError && e.code === "image_not_found");
  assert.equal(fake.requests.length, 0, "no request was made");
});

test("createSandbox: validation comes first, and what the original validated keeps its message", async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  const client = new DockerSandboxClient({ host: fake.host });
  const nul = { labels: { a: "\0" } };
  await assert.rejects(client.createSandbox({ ...base, ...nul, network: { mode: "bridge", ports: [0] } }), (e) => e instanceof DockerSandboxError && e.code === "port");
  await assert.rejects(client.createSandbox({ ...base, ...nul, labels: { "anvia.sandbox.x": "\0" } }), { message: "Docker label is reserved: anvia.sandbox.x" });
  await assert.rejects(client.createSandbox({ ...base, workdir: "/w\0" }), { message: "workdir must be an absolute POSIX path." });
  await assert.rejects(client.createSandbox({ ...base, workspace: { type: "docker-volume", name: "v\0" } }), { message: "workspace.name is not a valid Docker volume name." });
  await assert.rejects(client.createSandbox({ ...base, security: { seccompProfile: { type: "path", path: "/s\0" } } }), { message: "seccompProfile.path must be an absolute host path." });
  await assert.rejects(client.createSandbox({ ...base, files: { "a\0": "x" } }), (e) => e instanceof DockerSandboxError && e.message === "Sandbox path cannot contain null bytes.");
  await assert.rejects(client.createSandbox({ ...base, directories: ["d\0"] }), (e) => e instanceof DockerSandboxError && e.message === "Sandbox path cannot contain null bytes.");
  await assert.rejects(client.createSandbox({ ...base, env: { "A\0": "x" } }), { message: /^Invalid environment variable name: A/ });
  // Two capabilities that differ after a NUL are not duplicates (the original compared whole strings).
  const caps = { ...base, security: { dropCapabilities: ["A\0x", "A\0y"] } };
  await assert.rejects(client.createSandbox(caps), sameError(spawnError(createRunArgs(caps))));
  await assert.rejects(client.createSandbox({ ...base, ...nul, abortSignal: AbortSignal.abort("why") }), (e) => e === "why");
  assert.equal(fake.requests.length, 0, "no request was made");
});

test("pullImage: a NUL in the image is args[1] of `docker pull`, with no request", async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  const client = new DockerSandboxClient({ host: fake.host });
  await assert.rejects(client.pullImage({ image: "busybox\0:latest" }), sameError(spawnError(["pull", "busybox\0:latest"])));
  await assert.rejects(client.pullImage({ image: "x\0", abortSignal: AbortSignal.abort("why") }), (e) => e === "why");
  assert.equal(fake.requests.length, 0, "no request was made");
});
