// ANVIA_SANDBOX_EXEC_ID is reserved (issue 13, item 6): every command runs with it set to
// its own id so a timeout or an abort can find and end its process tree; a caller (or an
// LLM through exec_command's env) that could set it could make another command's timeout
// end this one. exec, execStream, startProcess and createSandbox refuse it in `env` with a
// TypeError naming the key, in the place the original checks env, before any I/O.
// A fake engine (in this process) serves the sandbox handle; no Docker is needed.
import test from "node:test";
import assert from "node:assert/strict";
import { DockerSandboxClient, createDockerSandboxTools } from "../../lib/index.js";
import { fakeSandbox } from "../helpers/fake-engine.js";

const RESERVED = { name: "TypeError", message: "Environment variable is reserved: ANVIA_SANDBOX_EXEC_ID" };
const env = { FOO: "1", ANVIA_SANDBOX_EXEC_ID: "0b0d7a16-8c1e-4d44-9d6c-2a2b6b1f0e3c" };

function execRequests(fake) {
  return fake.requests.filter((r) => r.method === "POST" && r.path.endsWith("/exec"));
}

async function drain(iterable) {
  for await (const event of iterable) void event;
}

test("exec, execStream and startProcess refuse ANVIA_SANDBOX_EXEC_ID in env, before any request", async (t) => {
  const { fake, runtime } = await fakeSandbox(t, { id: "reserved1" });
  const before = fake.requests.length;
  await assert.rejects(runtime.exec({ command: "true", env }), RESERVED);
  await assert.rejects(runtime.exec({ command: "true", env, input: "x" }), RESERVED);
  await assert.rejects(drain(runtime.execStream({ command: "true", env })), RESERVED);
  await assert.rejects(runtime.startProcess({ command: "sleep", args: ["1"], env }), RESERVED);
  assert.equal(fake.requests.length, before, "no request was made");
});

test("the reserved name is checked where env is: after its keys and values, before timeoutMs and input", async (t) => {
  const { runtime } = await fakeSandbox(t, { id: "reserved2" });
  await assert.rejects(runtime.exec({ command: "true", env: { ANVIA_SANDBOX_EXEC_ID: "x", "1bad": "y" } }), {
    name: "TypeError",
    message: "Invalid environment variable name: 1bad",
  });
  await assert.rejects(runtime.exec({ command: "true", env: { ANVIA_SANDBOX_EXEC_ID: "x", B: 2 } }), {
    message: "env.B must be a string.",
  });
  await assert.rejects(runtime.exec({ command: "true", cwd: "/abs", env }), { message: "Sandbox path must be relative: /abs" });
  await assert.rejects(runtime.exec({ command: "true", env, timeoutMs: -1 }), RESERVED);
  await assert.rejects(runtime.exec({ command: "true", env, input: 5 }), RESERVED);
  await assert.rejects(runtime.startProcess({ command: "true", args: [1], env }), { message: "args must contain only strings." });
});

test("names that only look like it are not reserved", async (t) => {
  const { fake, runtime } = await fakeSandbox(t, { id: "reserved3" });
  await runtime.exec({ command: "true", env: { ANVIA_SANDBOX_EXEC_IDX: "1", anvia_sandbox_exec_id: "2", XANVIA_SANDBOX_EXEC_ID: "3" } });
  const body = execRequests(fake).at(-1).json();
  for (const entry of ["ANVIA_SANDBOX_EXEC_IDX=1", "anvia_sandbox_exec_id=2", "XANVIA_SANDBOX_EXEC_ID=3"]) assert.ok(body.Env.includes(entry), entry);
  // The one the library sets is still there, once.
  assert.equal(body.Env.filter((e) => e.startsWith("ANVIA_SANDBOX_EXEC_ID=")).length, 1);
});

test("the exec_command tool refuses it too (the LLM's env goes to exec)", async (t) => {
  const { fake, runtime } = await fakeSandbox(t, { id: "reserved4" });
  const [tool] = createDockerSandboxTools({ sandbox: runtime, tools: ["exec_command"] });
  const before = execRequests(fake).length;
  await assert.rejects(tool.call({ command: "true", env }, {}), RESERVED);
  assert.equal(execRequests(fake).length, before);
});

test("createSandbox refuses it in env, in env's place among the checks", async () => {
  const client = new DockerSandboxClient({ host: "unix:///nonexistent/anvia-test.sock" });
  const base = { image: "img", workspace: { type: "ephemeral" }, network: { mode: "none" } };
  await assert.rejects(client.createSandbox({ ...base, env }), RESERVED);
  // Checks before env come first, checks after it come after.
  await assert.rejects(client.createSandbox({ ...base, env, security: { readonlyRootfs: 1 } }), { message: "readonlyRootfs must be a boolean." });
  await assert.rejects(client.createSandbox({ ...base, env, labels: { "anvia.sandbox.id": "x" } }), RESERVED);
  await assert.rejects(client.createSandbox({ ...base, env: { ANVIA_SANDBOX_EXEC_ID: 5 } }), { message: "env.ANVIA_SANDBOX_EXEC_ID must be a string." });
});
