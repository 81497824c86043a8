// withSandbox (issue 18) on the fake engine: it destroys the sandbox after the callback
// returns, after it throws and when the caller aborts (even a callback that never
// settles); when the cleanup fails, nothing is lost: DockerSandboxCleanupError after a
// successful callback, DockerSandboxRunError keeping both errors after a failed one, each
// with a retryCleanup() that destroys the sandbox once the engine cooperates again.
import test from "node:test";
import assert from "node:assert/strict";
import { DockerSandboxCleanupError, DockerSandboxRunError, withSandbox } from "../../lib/index.js";
import { HANG_MS, DockerSandboxClient, DockerSandboxError, sleep, startFakeEngine } from "../helpers/fake-engine.js";

const T = { timeout: HANG_MS }; // a hang fails after minutes; no test races a timer
const OPTIONS = { image: "img", workspace: { type: "ephemeral" }, network: { mode: "none" } };

async function setup(t) {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  const client = new DockerSandboxClient({ host: fake.host });
  return { fake, client };
}

function destroyed(fake) {
  return fake.seen("DELETE", /^\/containers\/anvia-sandbox-/).length > 0 && fake.seen("DELETE", /^\/volumes\/anvia-sandbox-/).length > 0;
}

test("withSandbox returns the callback's value and destroys the sandbox", T, async (t) => {
  const { fake, client } = await setup(t);
  let seen;
  const value = await withSandbox(client, OPTIONS, async (sandbox) => {
    seen = sandbox;
    assert.equal(sandbox.state, "running");
    return 42;
  });
  assert.equal(value, 42);
  assert.equal(seen.state, "destroyed");
  assert.ok(destroyed(fake));
  assert.equal(fake.state.containers.size, 0);
  assert.equal(fake.state.volumes.size, 0);
});

test("withSandbox rethrows the callback's error after destroying the sandbox", T, async (t) => {
  const { fake, client } = await setup(t);
  const boom = new Error("callback failed");
  let seen;
  await assert.rejects(
    withSandbox(client, OPTIONS, (sandbox) => {
      seen = sandbox;
      throw boom;
    }),
    (error) => error === boom,
  );
  assert.equal(seen.state, "destroyed");
  assert.equal(fake.state.containers.size, 0);
});

test("withSandbox on abort: rejects with the reason at once and destroys, though the callback never settles", T, async (t) => {
  const { fake, client } = await setup(t);
  const controller = new AbortController();
  const reason = new Error("caller gave up");
  let seen;
  const run = withSandbox(client, { ...OPTIONS, abortSignal: controller.signal }, (sandbox) => {
    seen = sandbox;
    setTimeout(() => controller.abort(reason), 50);
    return new Promise(() => {}); // never settles
  });
  // "At once": the callback never settles, so only the abort can end the call; a hang
  // fails on the test's own timeout, however slow the machine.
  await assert.rejects(run, (error) => error === reason);
  assert.equal(seen.state, "destroyed");
  assert.equal(fake.state.containers.size, 0);
});

test("withSandbox on abort while an operation is in flight: the operation is cancelled, the sandbox destroyed", T, async (t) => {
  const { fake, client } = await setup(t);
  fake.route("POST", "/containers/:name/exec", { hang: true });
  const controller = new AbortController();
  const reason = new Error("stop now");
  let inner;
  const run = withSandbox(client, { ...OPTIONS, abortSignal: controller.signal }, async (sandbox) => {
    // Aborted once the operation is in flight: its exec create reached the fake (which
    // never answers it), however long that took.
    fake.waitFor("POST", /^\/containers\/[^/]+\/exec$/).then(() => controller.abort(reason));
    inner = sandbox.runtime.exec({ command: "sleep", args: ["100"] });
    return inner;
  });
  await assert.rejects(run, (error) => error === reason);
  await assert.rejects(inner, (error) => error instanceof DockerSandboxError && error.code === "invalid_state");
  assert.equal(fake.state.containers.size, 0);
});

test("withSandbox when the abort comes before: nothing is created", T, async (t) => {
  const { fake, client } = await setup(t);
  const controller = new AbortController();
  const reason = new Error("never mind");
  controller.abort(reason);
  let called = false;
  await assert.rejects(
    withSandbox(client, { ...OPTIONS, abortSignal: controller.signal }, () => {
      called = true;
    }),
    (error) => error === reason,
  );
  assert.equal(called, false);
  assert.equal(fake.seen("POST", "/containers/create").length, 0);
});

test("withSandbox: the callback succeeded, the cleanup failed -> DockerSandboxCleanupError, retryCleanup works", T, async (t) => {
  const { fake, client } = await setup(t);
  const undo = fake.route("DELETE", "/containers/:name", { status: 500, json: { message: "driver failed removing" } });
  let caught;
  try {
    await withSandbox(client, OPTIONS, async () => "fine");
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof DockerSandboxCleanupError, String(caught));
  assert.equal(caught.name, "DockerSandboxCleanupError");
  assert.match(caught.message, /^Unable to clean up sandbox: /);
  assert.ok(caught.cause instanceof AggregateError);
  assert.equal(caught.cleanupError, caught.cause);
  assert.match(caught.cause.errors[0].message, /Unable to remove Docker sandbox/);
  assert.equal(caught.sandbox.state, "error");
  undo();
  await caught.retryCleanup();
  assert.equal(caught.sandbox.state, "destroyed");
  assert.equal(fake.state.containers.size, 0);
});

test("withSandbox: callback and cleanup both failed -> DockerSandboxRunError keeps both, retryCleanup works", T, async (t) => {
  const { fake, client } = await setup(t);
  const undo = fake.route("DELETE", "/containers/:name", { status: 500, json: { message: "device or resource busy" } });
  const boom = new TypeError("the agent's bug");
  let caught;
  try {
    await withSandbox(client, OPTIONS, async (sandbox) => {
      await sleep(1);
      assert.equal(sandbox.state, "running");
      throw boom;
    });
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof DockerSandboxRunError, String(caught));
  assert.equal(caught.name, "DockerSandboxRunError");
  assert.equal(caught.primaryError, boom);
  assert.equal(caught.cause, boom);
  assert.ok(caught.cleanupError instanceof AggregateError);
  assert.match(caught.cleanupError.errors[0].details.message, /device or resource busy/);
  assert.match(caught.message, /both failed/);
  undo();
  await caught.retryCleanup();
  assert.equal(caught.sandbox.state, "destroyed");
  assert.equal(fake.state.containers.size, 0);
});

test("withSandbox validates its arguments before creating anything", T, async (t) => {
  const { fake, client } = await setup(t);
  await assert.rejects(withSandbox({}, OPTIONS, () => {}), { name: "TypeError", message: "client must be a DockerSandboxClient." });
  await assert.rejects(withSandbox(client, null, () => {}), { name: "TypeError", message: "options must be an object." });
  await assert.rejects(withSandbox(client, OPTIONS, "nope"), { name: "TypeError", message: "callback must be a function." });
  assert.equal(fake.requests.length, 0);
});
