// The module's runtime exports are the original's three, plus withSandbox and its two
// cleanup errors (issue 18), and behave as classes and a function should for code written
// against the original.
import test from "node:test";
import assert from "node:assert/strict";
import * as sandbox from "../../lib/index.js";

test("the runtime exports are the original's three, withSandbox and its two errors", () => {
  assert.deepEqual(Object.keys(sandbox).sort(), [
    "DockerSandboxCleanupError",
    "DockerSandboxClient",
    "DockerSandboxError",
    "DockerSandboxRunError",
    "createDockerSandboxTools",
    "withSandbox",
  ]);
  assert.equal(typeof sandbox.DockerSandboxClient, "function");
  assert.equal(typeof sandbox.createDockerSandboxTools, "function");
  assert.equal(typeof sandbox.withSandbox, "function");
});

test("DockerSandboxError has message, code, details, cause and name, and is an Error", () => {
  const cause = new Error("root");
  const error = new sandbox.DockerSandboxError("boom", "timeout", { n: 1 }, { cause });
  assert.ok(error instanceof Error);
  assert.ok(error instanceof sandbox.DockerSandboxError);
  assert.equal(error.name, "DockerSandboxError");
  assert.equal(error.message, "boom");
  assert.equal(error.code, "timeout");
  assert.deepEqual(error.details, { n: 1 });
  assert.equal(error.cause, cause);
  assert.match(error.stack, /DockerSandboxError: boom/);
});

test("errors raised by the native side are instances of the exported class", async () => {
  const client = new sandbox.DockerSandboxClient({ host: "unix:///nonexistent/exports-test.sock" });
  await assert.rejects(client.pullImage({ image: "x" }), (error) => {
    assert.ok(error instanceof sandbox.DockerSandboxError);
    assert.equal(error.code, "docker_unavailable");
    return true;
  });
});

// The unit tests' natives (napi/exports_*.c) are compiled into the debug and asan builds
// only (ANVIA_TEST_EXPORTS): the release binary, which is what ships, has none of them but
// normalizeSandboxPath, the package's own (lib/tools.js). The prebuilt binaries are checked
// the same way by test/tooling/consumer.test.js.
test("the unit tests' natives are in the debug and asan builds only", async () => {
  const { native } = await import("../../lib/native.js");
  const { TEST_NATIVES } = await import("../helpers/native.js");
  const present = TEST_NATIVES.filter((name) => typeof native[name] === "function");
  assert.equal(typeof native.normalizeSandboxPath, "function");
  if ((process.env.ANVIA_SANDBOX_BUILD ?? "release") === "release") assert.deepEqual(present, [], "test natives in the release build");
  else assert.deepEqual(present, TEST_NATIVES, `the ${process.env.ANVIA_SANDBOX_BUILD} build lacks test natives`);
});
