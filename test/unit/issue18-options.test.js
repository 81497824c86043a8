// Option checks of issue 18's additions, made before any request (so no engine is
// needed): createSandbox's `lifetime`, listSandboxes, pruneSandboxes, fork and stats.
import test from "node:test";
import assert from "node:assert/strict";
import { DockerSandboxClient } from "../../lib/index.js";

const client = new DockerSandboxClient({ host: "unix:///nonexistent/issue18-options.sock" });
const base = { image: "img", workspace: { type: "ephemeral" }, network: { mode: "none" } };

async function refused(promise, type, message) {
  await assert.rejects(promise, (error) => {
    assert.ok(error instanceof type, `${error?.name}: ${error?.message}`);
    if (typeof message === "string") assert.equal(error.message, message);
    else assert.match(error.message, message);
    return true;
  });
}

test("createSandbox: lifetime must be an object of whole milliseconds from 1 s", async () => {
  await refused(client.createSandbox({ ...base, lifetime: 5 }), TypeError, "lifetime must be an object.");
  await refused(client.createSandbox({ ...base, lifetime: null }), TypeError, "lifetime must be an object.");
  const range = (name) => `lifetime.${name} must be an integer from 1000 to 9000000000000.`;
  for (const bad of [999, 0, -1, 1500.5, "2000", Number.NaN, 9e12 + 1, 2 ** 53]) {
    await refused(client.createSandbox({ ...base, lifetime: { idleTimeoutMs: bad } }), RangeError, range("idleTimeoutMs"));
    await refused(client.createSandbox({ ...base, lifetime: { maxLifetimeMs: bad } }), RangeError, range("maxLifetimeMs"));
  }
  // The original's own checks come first.
  await refused(client.createSandbox({ ...base, image: "", lifetime: 5 }), TypeError, "image must be a non-empty string.");
});

test("listSandboxes and pruneSandboxes check their options", async () => {
  await refused(client.listSandboxes(5), TypeError, "options must be an object.");
  await refused(client.listSandboxes({ labels: [] }), TypeError, "labels must be an object.");
  await refused(client.listSandboxes({ labels: { a: 1 } }), TypeError, "labels.a must be a string.");
  await refused(client.listSandboxes({ state: "exited" }), TypeError, "state must be one of running, stopped, paused, restarting, removing, dead.");
  await refused(client.pruneSandboxes({ stoppedForMs: -1 }), RangeError, "stoppedForMs must be a non-negative safe integer.");
  await refused(client.pruneSandboxes({ createdBeforeMs: 1.5 }), RangeError, "createdBeforeMs must be a non-negative safe integer.");
  await refused(client.pruneSandboxes({ dryRun: "yes" }), TypeError, "dryRun must be a boolean.");
  await refused(client.pruneSandboxes({ labels: "x" }), TypeError, "labels must be an object.");
});
