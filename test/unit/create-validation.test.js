// Every validation of DockerSandboxClient, pullImage, createSandbox and resumeSandbox, with
// the original's error classes and messages. No engine is needed: validation happens
// before any I/O (the client points at a socket that does not exist).
import test from "node:test";
import assert from "node:assert/strict";
import { DockerSandboxClient, DockerSandboxError } from "../../lib/index.js";

const client = new DockerSandboxClient({ host: "unix:///nonexistent/anvia-test.sock" });
const base = { image: "img", workspace: { type: "ephemeral" }, network: { mode: "none" } };

async function rejects(promise, Class, message, code) {
  await assert.rejects(promise, (error) => {
    assert.equal(error.constructor, Class, `class of ${error}`);
    assert.equal(error.message, message);
    if (code !== undefined) assert.equal(error.code, code);
    return true;
  });
}

test("client constructor validation", () => {
  assert.throws(() => new DockerSandboxClient(null), { name: "TypeError", message: "options must be an object." });
  assert.throws(() => new DockerSandboxClient([]), { name: "TypeError", message: "options must be an object." });
  assert.throws(() => new DockerSandboxClient("x"), { name: "TypeError", message: "options must be an object." });
  assert.throws(() => new DockerSandboxClient({ dockerPath: "" }), {
    name: "TypeError",
    message: "dockerPath must be a non-empty string.",
  });
  assert.throws(() => new DockerSandboxClient({ dockerPath: 5 }), { message: "dockerPath must be a non-empty string." });
  assert.throws(() => new DockerSandboxClient({ host: "" }), { message: "host must be a non-empty string." });
  assert.throws(() => new DockerSandboxClient({ host: "ftp://box" }), TypeError);
  assert.throws(() => new DockerSandboxClient({ host: "ssh://user:secret@box" }), TypeError);
  assert.throws(() => new DockerSandboxClient({ host: "unix://relative.sock" }), TypeError);
  assert.throws(() => new DockerSandboxClient({ host: "tcp://h:99999" }), TypeError);
  assert.equal(new DockerSandboxClient().dockerPath, "docker");
  assert.equal(new DockerSandboxClient({ dockerPath: "/usr/bin/docker" }).dockerPath, "/usr/bin/docker");
  new DockerSandboxClient({ host: "tcp://127.0.0.1:2375" });
  new DockerSandboxClient({ host: "unix:///var/run/docker.sock" });
  new DockerSandboxClient({ host: "ssh://user@box:2222" });
});

test("pullImage validation", async () => {
  await rejects(client.pullImage(null), TypeError, "options must be an object.");
  await rejects(client.pullImage({}), TypeError, "image must be a non-empty string.");
  await rejects(client.pullImage({ image: "" }), TypeError, "image must be a non-empty string.");
  const aborted = AbortSignal.abort(new Error("stop"));
  await rejects(client.pullImage({ image: "x", abortSignal: aborted }), Error, "stop");
});

test("resumeSandbox validation", async () => {
  await rejects(client.resumeSandbox(undefined), TypeError, "options must be an object.");
  const idMessage = "Sandbox id must be 1-63 lowercase letters, numbers, dots, underscores, or hyphens.";
  for (const id of [undefined, "", "UPPER", "-lead", "a".repeat(64), "a b", 5, "é"]) {
    await rejects(client.resumeSandbox({ id }), TypeError, idMessage);
  }
  const aborted = AbortSignal.abort("why");
  await assert.rejects(client.resumeSandbox({ id: "ok", abortSignal: aborted }), (e) => e === "why");
});

const cases = [
  [null, TypeError, "options must be an object."],
  [5, TypeError, "options must be an object."],
  [{}, TypeError, "image must be a non-empty string."],
  [{ ...base, image: "" }, TypeError, "image must be a non-empty string."],
  [{ ...base, id: "Bad" }, TypeError, "Sandbox id must be 1-63 lowercase letters, numbers, dots, underscores, or hyphens."],
  [{ ...base, id: null }, TypeError, "Sandbox id must be 1-63 lowercase letters, numbers, dots, underscores, or hyphens."],
  [{ ...base, workdir: "relative" }, TypeError, "workdir must be an absolute POSIX path."],
  [{ ...base, workdir: "/a\0b" }, TypeError, "workdir must be an absolute POSIX path."],
  [{ ...base, workdir: 5 }, TypeError, 'The "path" argument must be of type string. Received type number (5)'],
  [{ ...base, workspace: undefined }, TypeError, "workspace must be an object."],
  [{ ...base, workspace: [] }, TypeError, "workspace must be an object."],
  [{ ...base, workspace: { type: "docker-volume" } }, TypeError, "workspace.name must be a non-empty string."],
  [{ ...base, workspace: { type: "docker-volume", name: "a,b" } }, TypeError, "workspace.name is not a valid Docker volume name."],
  [{ ...base, workspace: { type: "docker-volume", name: "a\0b" } }, TypeError, "workspace.name is not a valid Docker volume name."],
  [{ ...base, workspace: { type: "tmp" } }, TypeError, "workspace must use type ephemeral or docker-volume."],
  [{ ...base, workspace: { type: "ephemeral", name: "x" } }, TypeError, "An ephemeral workspace cannot specify a Docker volume name."],
  [{ ...base, workspace: { type: "ephemeral", name: undefined } }, TypeError, "An ephemeral workspace cannot specify a Docker volume name."],
  [{ ...base, network: null }, TypeError, "network must be an object."],
  [{ ...base, network: { mode: "host" } }, TypeError, "network must use mode none or bridge."],
  [{ ...base, network: { mode: "none", ports: [] } }, TypeError, "Network mode none cannot publish ports."],
  [{ ...base, network: { mode: "bridge", ports: 80 } }, TypeError, "network.ports must be an array."],
  [{ ...base, network: { mode: "bridge", ports: null } }, TypeError, "network.ports must be an array."],
  [{ ...base, network: { mode: "bridge", ports: [0] } }, DockerSandboxError, "Sandbox port must be an integer from 1 to 65535: 0", "port"],
  [{ ...base, network: { mode: "bridge", ports: [65536] } }, DockerSandboxError, "Sandbox port must be an integer from 1 to 65535: 65536", "port"],
  [{ ...base, network: { mode: "bridge", ports: [1.5] } }, DockerSandboxError, "Sandbox port must be an integer from 1 to 65535: 1.5", "port"],
  [{ ...base, network: { mode: "bridge", ports: ["80"] } }, DockerSandboxError, "Sandbox port must be an integer from 1 to 65535: 80", "port"],
  [{ ...base, network: { mode: "bridge", ports: [80, 80] } }, DockerSandboxError, "Sandbox port is duplicated: 80", "port"],
  [{ ...base, runtime: 5 }, TypeError, "runtime must be an object."],
  [{ ...base, runtime: null }, TypeError, "runtime must be an object."],
  [{ ...base, runtime: { commandTimeoutMs: 0 } }, RangeError, "commandTimeoutMs must be a positive safe integer."],
  [{ ...base, runtime: { commandTimeoutMs: 2 ** 53 } }, RangeError, "commandTimeoutMs must be a positive safe integer."],
  [{ ...base, runtime: { maxOutputBytes: -1 } }, RangeError, "maxOutputBytes must be a non-negative safe integer."],
  [{ ...base, runtime: { maxFileBytes: 1.5 } }, RangeError, "maxFileBytes must be a non-negative safe integer."],
  [{ ...base, runtime: { maxProcesses: "4" } }, RangeError, "maxProcesses must be a non-negative safe integer."],
  [{ ...base, resources: [] }, TypeError, "resources must be an object."],
  [{ ...base, resources: { memoryMb: 0 } }, RangeError, "memoryMb must be a positive safe integer."],
  [{ ...base, resources: { pidsLimit: -5 } }, RangeError, "pidsLimit must be a positive safe integer."],
  [{ ...base, resources: { sharedMemoryMb: 0.5 } }, RangeError, "sharedMemoryMb must be a positive safe integer."],
  [{ ...base, resources: { cpus: 0 } }, RangeError, "cpus must be a positive finite number."],
  [{ ...base, resources: { cpus: Infinity } }, RangeError, "cpus must be a positive finite number."],
  [{ ...base, resources: { cpus: "1" } }, RangeError, "cpus must be a positive finite number."],
  [{ ...base, security: "x" }, TypeError, "security must be an object."],
  [{ ...base, security: { dropCapabilities: "ALL" } }, TypeError, "dropCapabilities must be an array."],
  [{ ...base, security: { addCapabilities: {} } }, TypeError, "addCapabilities must be an array."],
  [{ ...base, security: { readonlyRootfs: "yes" } }, TypeError, "readonlyRootfs must be a boolean."],
  [{ ...base, security: { noNewPrivileges: 1 } }, TypeError, "noNewPrivileges must be a boolean."],
  [{ ...base, security: { seccompProfile: { type: "file", path: "/x" } } }, TypeError, 'seccompProfile must be a { type: "path", path } object.'],
  [{ ...base, security: { seccompProfile: null } }, TypeError, 'seccompProfile must be a { type: "path", path } object.'],
  [{ ...base, security: { seccompProfile: { type: "path" } } }, TypeError, "seccompProfile.path must be a non-empty string."],
  [{ ...base, security: { seccompProfile: { type: "path", path: "rel.json" } } }, TypeError, "seccompProfile.path must be an absolute host path."],
  [{ ...base, security: { dropCapabilities: [""] } }, TypeError, "dropCapabilities value must be a non-empty string."],
  [{ ...base, security: { dropCapabilities: ["NET_RAW", "NET_RAW"] } }, TypeError, "dropCapabilities contains a duplicate: NET_RAW"],
  [{ ...base, security: { addCapabilities: [5] } }, TypeError, "addCapabilities value must be a non-empty string."],
  [{ ...base, security: { addCapabilities: ["A", "A"] } }, TypeError, "addCapabilities contains a duplicate: A"],
  [{ ...base, env: [] }, TypeError, "env must be an object."],
  [{ ...base, env: { A: 1 } }, TypeError, "env.A must be a string."],
  [{ ...base, env: { "1A": "x" } }, TypeError, "Invalid environment variable name: 1A"],
  [{ ...base, env: { "A-B": "x" } }, TypeError, "Invalid environment variable name: A-B"],
  [{ ...base, labels: null }, TypeError, "labels must be an object."],
  [{ ...base, labels: { a: true } }, TypeError, "labels.a must be a string."],
  [{ ...base, labels: { "anvia.sandbox.id": "x" } }, TypeError, "Docker label is reserved: anvia.sandbox.id"],
  [{ ...base, user: "" }, TypeError, "user must be a non-empty string."],
  [{ ...base, user: 1000 }, TypeError, "user must be a non-empty string."],
  [{ ...base, directories: "src" }, TypeError, "directories must be an array."],
  [{ ...base, directories: [5] }, TypeError, "directories must contain strings."],
  [{ ...base, directories: [""] }, DockerSandboxError, "Sandbox path cannot be empty.", "invalid_path"],
  [{ ...base, directories: ["/abs"] }, DockerSandboxError, "Sandbox path must be relative: /abs", "invalid_path"],
  [{ ...base, directories: ["a/../.."] }, DockerSandboxError, "Sandbox path cannot leave the workspace: a/../..", "invalid_path"],
  [{ ...base, directories: ["."] }, DockerSandboxError, "Sandbox path must refer to a file or directory inside the workspace.", "invalid_path"],
  [{ ...base, directories: ["..\\x"] }, DockerSandboxError, "Sandbox path cannot leave the workspace: ..\\x", "invalid_path"],
  [{ ...base, files: [] }, TypeError, "files must be an object."],
  [{ ...base, files: { "a\0b": "x" } }, DockerSandboxError, "Sandbox path cannot contain null bytes.", "invalid_path"],
  [{ ...base, files: { a: 5 } }, TypeError, "Initial file must be a string or Uint8Array: a"],
  [{ ...base, files: { a: new Uint16Array(2) } }, TypeError, "Initial file must be a string or Uint8Array: a"],
  [{ ...base, files: { a: "é" }, runtime: { maxFileBytes: 1 } }, DockerSandboxError, "Initial file exceeds maxFileBytes (2 > 1): a", "file_too_large"],
  [{ ...base, files: { "x/y": new Uint8Array(11 * 1024 * 1024) } }, DockerSandboxError, "Initial file exceeds maxFileBytes (11534336 > 10485760): x/y", "file_too_large"],
  // Upstream 1.1.2 (checked last here: where upstream checks it among the others is not
  // in the sources we have).
  [{ ...base, containerRuntime: "" }, TypeError, "containerRuntime must be a non-empty string."],
  [{ ...base, containerRuntime: 5 }, TypeError, "containerRuntime must be a non-empty string."],
  [{ ...base, containerRuntime: null }, TypeError, "containerRuntime must be a non-empty string."],
  [{ ...base, containerRuntime: ["runsc"] }, TypeError, "containerRuntime must be a non-empty string."],
];

test("createSandbox validation: every rule, in the original's order", async () => {
  for (const [options, Class, message, code] of cases) {
    await rejects(client.createSandbox(options), Class, message, code);
  }
});

test("createSandbox: validation comes before the abort check; an aborted signal rejects with its reason", async () => {
  const reason = new Error("aborted early");
  const signal = AbortSignal.abort(reason);
  await rejects(client.createSandbox({ ...base, image: "", abortSignal: signal }), TypeError, "image must be a non-empty string.");
  await assert.rejects(client.createSandbox({ ...base, abortSignal: signal }), (e) => e === reason);
});

test("createSandbox: the order of checks follows the original (image before workspace before network)", async () => {
  await rejects(client.createSandbox({ workspace: 1, network: 1 }), TypeError, "image must be a non-empty string.");
  await rejects(client.createSandbox({ image: "x", network: 1 }), TypeError, "workspace must be an object.");
  await rejects(
    client.createSandbox({ ...base, runtime: { commandTimeoutMs: 0 }, resources: { memoryMb: 0 } }),
    RangeError,
    "commandTimeoutMs must be a positive safe integer.",
  );
  await rejects(
    client.createSandbox({ ...base, env: { A: 1 }, labels: { "anvia.sandbox.x": "" } }),
    TypeError,
    "env.A must be a string.",
  );
});

test("an unreachable engine is docker_unavailable, naming the endpoint, and quick", async () => {
  const started = performance.now();
  await assert.rejects(client.createSandbox(base), (error) => {
    assert.ok(error instanceof DockerSandboxError);
    assert.equal(error.code, "docker_unavailable");
    assert.match(error.message, /unix:\/\/\/nonexistent\/anvia-test\.sock/);
    return true;
  });
  assert.ok(performance.now() - started < 2000);
  const tcp = new DockerSandboxClient({ host: "tcp://127.0.0.1:1" });
  await assert.rejects(tcp.pullImage({ image: "x" }), (error) => error.code === "docker_unavailable" && /tcp:\/\/127\.0\.0\.1:1/.test(error.message));
});
