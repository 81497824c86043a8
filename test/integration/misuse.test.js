// Misuse: operations on a stopping, stopped or destroyed sandbox, concurrent stop and
// destroy calls, and every runtime method called with the wrong kind of argument. The
// answers are the original's errors, and nothing is left running or half-done.
import test from "node:test";
import assert from "node:assert/strict";
import { DockerSandboxClient, DockerSandboxError } from "../../lib/index.js";
import { baseOptions, inspectContainer, labelledLeftovers } from "../helpers/docker.js";

const client = new DockerSandboxClient();

const runtimeCalls = (rt) => ({
  exec: () => rt.exec({ command: "true" }),
  execStream: async () => {
    for await (const event of rt.execStream({ command: "true" })) void event;
  },
  readFile: () => rt.readFile({ path: "a" }),
  readTextFile: () => rt.readTextFile({ path: "a" }),
  readTextFilePage: () => rt.readTextFilePage({ path: "a" }),
  writeFile: () => rt.writeFile({ path: "a", data: new Uint8Array(1) }),
  writeTextFile: () => rt.writeTextFile({ path: "a", text: "x" }),
  listFiles: () => rt.listFiles(),
  startProcess: () => rt.startProcess({ command: "true" }),
  listProcesses: () => rt.listProcesses(),
  readProcessLogs: () => rt.readProcessLogs({ processId: "x" }),
  stopProcess: () => rt.stopProcess({ processId: "x" }),
});

test("every operation on a stopped or destroyed sandbox is invalid_state, with the original's message", async () => {
  const sandbox = await client.createSandbox(baseOptions());
  await sandbox.stop();
  for (const [name, call] of Object.entries(runtimeCalls(sandbox.runtime))) {
    await assert.rejects(call(), (error) => {
      assert.ok(error instanceof DockerSandboxError, `${name}: ${error}`);
      assert.equal(error.code, "invalid_state", name);
      assert.equal(error.message, `Sandbox ${sandbox.id} is not running (stopped).`, name);
      assert.deepEqual(error.details, { state: "stopped" });
      return true;
    });
  }
  await sandbox.destroy();
  for (const [name, call] of Object.entries(runtimeCalls(sandbox.runtime))) {
    await assert.rejects(call(), { code: "invalid_state", message: `Sandbox ${sandbox.id} is not running (destroyed).` }, name);
  }
  await assert.rejects(sandbox.stop(), { code: "invalid_state", message: `Sandbox ${sandbox.id} is not running (destroyed).` });
  await sandbox.destroy(); // a second destroy is a no-op
  assert.equal(sandbox.state, "destroyed");
});

test("concurrent stop/stop, stop/destroy and destroy/destroy settle once and leave nothing", async () => {
  const a = await client.createSandbox(baseOptions());
  const [s1, s2] = [a.stop(), a.stop()];
  assert.equal(a.state, "stopping");
  await Promise.all([s1, s2]);
  assert.equal(a.state, "stopped");
  assert.equal((await inspectContainer(`anvia-sandbox-${a.id}`)).State.Running, false);
  await a.destroy();

  const b = await client.createSandbox(baseOptions());
  const longRun = b.runtime.exec({ command: "sleep", args: ["30"] });
  const stopping = b.stop();
  const destroying = b.destroy(); // waits for the stop, then destroys
  await assert.rejects(longRun, { code: "invalid_state", message: "Sandbox is stopping." });
  await stopping;
  await destroying;
  assert.equal(b.state, "destroyed");
  assert.equal(await inspectContainer(`anvia-sandbox-${b.id}`), undefined);

  const c = await client.createSandbox(baseOptions());
  await Promise.all([c.destroy(), c.destroy(), c[Symbol.asyncDispose]()]);
  assert.equal(c.state, "destroyed");
  for (const id of [a.id, b.id, c.id]) assert.deepEqual(await labelledLeftovers(id), { containers: [], volumes: [] });
});

test("operations started while the sandbox stops are refused; ones in flight are cancelled", async (t) => {
  const sandbox = await client.createSandbox(baseOptions());
  t.after(() => sandbox.destroy());
  const inFlight = [
    sandbox.runtime.exec({ command: "sleep", args: ["20"] }),
    sandbox.runtime.readFile({ path: "x" }),
    sandbox.runtime.listFiles(),
  ];
  const stopping = sandbox.stop();
  await assert.rejects(sandbox.runtime.exec({ command: "true" }), { code: "invalid_state", message: `Sandbox ${sandbox.id} is not running (stopping).` });
  for (const p of inFlight) {
    await assert.rejects(p, (e) => e instanceof DockerSandboxError && (e.code === "invalid_state" || e.code === "docker_command_failed"));
  }
  await stopping;
  // Resuming brings a fresh handle; the old one stays stopped.
  const again = await client.resumeSandbox({ id: sandbox.id });
  assert.equal(sandbox.state, "stopped");
  assert.equal((await again.runtime.exec({ command: "true" })).exitCode, 0);
});

test("every runtime method refuses a non-object options argument, and other wrong types, as the original", async (t) => {
  const sandbox = await client.createSandbox(baseOptions());
  t.after(() => sandbox.destroy());
  const rt = sandbox.runtime;
  const needsOptions = ["exec", "readFile", "readTextFile", "readTextFilePage", "writeFile", "writeTextFile", "startProcess", "readProcessLogs", "stopProcess", "waitForPort"];
  for (const name of needsOptions) {
    for (const bad of [undefined, null, 5, "x", []]) {
      await assert.rejects(rt[name](bad), { name: "TypeError", message: "options must be an object." }, `${name}(${JSON.stringify(bad)})`);
    }
  }
  for (const name of ["listFiles", "listProcesses"]) {
    for (const bad of [null, 5, "x", []]) {
      await assert.rejects(rt[name](bad), { name: "TypeError", message: "options must be an object." }, name);
    }
  }
  await assert.rejects(async () => {
    for await (const e of rt.execStream(null)) void e;
  }, { name: "TypeError", message: "options must be an object." });
  await assert.rejects(rt.writeFile({ path: "a", data: "text" }), { name: "TypeError", message: "data must be a Uint8Array." });
  await assert.rejects(rt.writeFile({ path: "a", data: [1, 2] }), { name: "TypeError", message: "data must be a Uint8Array." });
  await assert.rejects(rt.writeTextFile({ path: "a", text: new Uint8Array(1) }), { name: "TypeError", message: "text must be a string." });
  await assert.rejects(rt.readFile({ path: "" }), { code: "invalid_path", message: "Sandbox path cannot be empty." });
  await assert.rejects(rt.readTextFilePage({ path: "a", startLine: 0 }), { name: "RangeError", message: "startLine must be a positive safe integer." });
  await assert.rejects(rt.readTextFilePage({ path: "a", lineCount: 1.5 }), { name: "RangeError", message: "lineCount must be a positive safe integer." });
  await assert.rejects(rt.readTextFilePage({ path: "a", maxBytes: "9" }), { name: "RangeError", message: "maxBytes must be a positive safe integer." });
  assert.throws(() => sandbox.inspector(), { name: "TypeError", message: "options must be an object." });
  assert.throws(() => sandbox.inspector({}), { name: "TypeError", message: "Sandbox inspector must enable at least one capability." });
  await assert.rejects(sandbox.stop(null), { name: "TypeError", message: "options must be an object." });
  // The inspector exposes exactly what was asked for, bound to the runtime.
  const inspector = sandbox.inspector({ files: true, ports: true });
  assert.deepEqual(Object.keys(inspector).sort(), ["containerRuntime", "id", "listFiles", "provider", "publishedPorts", "readFile", "workdir"]);
  assert.ok(Object.isFrozen(inspector));
  assert.deepEqual(await inspector.listFiles(), []);
  assert.ok(Object.isFrozen(sandbox.runtime));
});
