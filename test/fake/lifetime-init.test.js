// Issue 23 item 6 on the fake engine: how a sandbox with limits gets its init (the agent's
// binary placed at /.anvia/init between the container's create and its start, by create,
// resume and fork), when it does not (read-only rootfs, no binary for the engine's
// architecture: the shell loop), what a refused placement does (the create fails and
// removes its container; a resume does not start it), and the host's lifetime watch (the
// same run still running past maxLifetimeMs + 2 s is stopped with stop?t=1).
// The real init, on real engines: test/integration/lifetime.test.js.
import test from "node:test";
import assert from "node:assert/strict";
import { HANG_MS, DockerSandboxClient, DockerSandboxError, answerFork, startFakeEngine } from "../helpers/fake-engine.js";
import { standInAgent } from "../helpers/native.js";

const T = { timeout: HANG_MS };
const INIT = "/.anvia/init";

const { bytes: AGENT_BYTES } = standInAgent(test, "anvia-lifetime-init-", Buffer.from("#!/bin/true\nthe init's bytes\n"));

async function engine(t, arch = "amd64") {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  fake.route("GET", "/version", { status: 200, json: { ApiVersion: fake.apiVersion, Version: "20.10.0-fake", Arch: arch } });
  return { fake, client: new DockerSandboxClient({ host: fake.host }) };
}

const at = (fake, method, path) => fake.requests.findIndex((r) => r.method === method && r.path.includes(path));
const options = (extra = {}) => ({ image: "fake:latest", workspace: { type: "ephemeral" }, network: { mode: "none" }, ...extra });

test("with limits, the package's binary is placed at /.anvia/init after the create and before the start", T, async (t) => {
  const { fake, client } = await engine(t);
  await client.createSandbox(options({ id: "lim", lifetime: { idleTimeoutMs: 4000, maxLifetimeMs: 60_000 } }));
  const c = fake.state.containers.get("anvia-sandbox-lim");
  assert.deepEqual(c.createBody.Cmd, [INIT, "init", "4000", "60000"]);
  const put = at(fake, "PUT", "/containers/anvia-sandbox-lim/archive");
  assert.ok(at(fake, "POST", "/containers/create") < put && put < at(fake, "POST", "/containers/anvia-sandbox-lim/start"));
  const upload = fake.state.uploads.find((u) => u.container === "anvia-sandbox-lim");
  assert.equal(upload.path, "/");
  assert.deepEqual(upload.entries.map((e) => [e.name, e.type, e.mode & 0o7777]), [[".anvia/", "5", 0o755], [".anvia/init", "0", 0o755]]);
  assert.deepEqual(upload.entries[1].content, AGENT_BYTES);
});

test("the shell loop keeps the limits where nothing can be placed before the start", T, async (t) => {
  for (const [label, arch, extra] of [
    ["a read-only rootfs", "amd64", { security: { readonlyRootfs: true } }],
    ["no binary for the engine's architecture", "s390x", {}],
  ]) {
    const { fake, client } = await engine(t, arch);
    const sandbox = await client.createSandbox(options({ id: "loop", lifetime: { idleTimeoutMs: 4000 }, ...extra }));
    const c = fake.state.containers.get("anvia-sandbox-loop");
    assert.deepEqual(c.createBody.Cmd.slice(0, 2), ["sh", "-c"], label);
    assert.equal(at(fake, "PUT", "/archive"), -1, `${label}: nothing uploaded before the start`);
    await sandbox.destroy();
  }
});

test("a refused init fails the create with the engine's words and removes the container", T, async (t) => {
  const { fake, client } = await engine(t);
  fake.route("PUT", "/containers/:name/archive", { status: 500, json: { message: "no space left on device" } });
  const failure = await client.createSandbox(options({ id: "refused", lifetime: { maxLifetimeMs: 60_000 } })).catch((e) => e);
  assert.ok(failure instanceof DockerSandboxError, String(failure));
  assert.equal(failure.code, "docker_command_failed");
  assert.match(failure.message, /Unable to place the sandbox's limits in its container/);
  assert.equal(at(fake, "POST", "/containers/anvia-sandbox-refused/start"), -1, "never started");
  assert.ok(at(fake, "DELETE", "/containers/anvia-sandbox-refused") >= 0, "the container is removed");
  assert.equal(fake.state.containers.has("anvia-sandbox-refused"), false);
});

test("resume places the init again before its start; a refused placement leaves it stopped", T, async (t) => {
  const { fake, client } = await engine(t);
  const labels = { "anvia.sandbox.lifetime.max-lifetime-ms": "60000" };
  const cmd = [INIT, "init", "0", "60000"];
  const c = fake.addContainer("res", { labels, extra: {} });
  c.Config.Cmd = cmd;
  await client.resumeSandbox({ id: "res" });
  const put = at(fake, "PUT", "/containers/anvia-sandbox-res/archive");
  assert.ok(put >= 0 && put < at(fake, "POST", "/containers/anvia-sandbox-res/start"));
  assert.deepEqual(fake.state.uploads.at(-1).entries[1].content, AGENT_BYTES);

  const d = fake.addContainer("res2", { labels });
  d.Config.Cmd = cmd;
  fake.route("PUT", "/containers/anvia-sandbox-res2/archive", { status: 500, json: { message: "not a directory" } });
  const failure = await client.resumeSandbox({ id: "res2" }).catch((e) => e);
  assert.ok(failure instanceof DockerSandboxError, String(failure));
  assert.match(failure.message, /^Unable to place the sandbox's limits in its container before it starts: .*not a directory/);
  assert.equal(at(fake, "POST", "/containers/anvia-sandbox-res2/start"), -1, "a container whose init was not placed is not started");
});

test("a fork of a sandbox with the init places it in the fork before the fork starts", T, async (t) => {
  const { fake, client } = await engine(t);
  answerFork(fake);
  const sandbox = await client.createSandbox(options({ id: "par", lifetime: { maxLifetimeMs: 60_000 } }));
  // The fake's inspection shows the command the create sent, and the image.
  const parent = fake.state.containers.get("anvia-sandbox-par");
  parent.Config.Cmd = parent.createBody.Cmd;
  parent.Image = "sha256:base";
  await sandbox.fork({ id: "kid" });
  assert.deepEqual(fake.state.containers.get("anvia-sandbox-kid").createBody.Cmd, [INIT, "init", "0", "60000"]);
  const put = at(fake, "PUT", "/containers/anvia-sandbox-kid/archive");
  assert.ok(put >= 0 && put < at(fake, "POST", "/containers/anvia-sandbox-kid/start"));
});

test("the host's watch stops the same run once it outlived maxLifetimeMs by 2 s", T, async (t) => {
  const { fake, client } = await engine(t);
  fake.route("POST", "/containers/:name/start", (req, res, ctx) => {
    const c = fake.state.containers.get(req.params.name);
    if (c) c.State.StartedAt = "2026-12-03T10:00:00.123456789Z";
    return ctx.next();
  });
  // The watch belongs to the handle: held here until the stop comes.
  const sandbox = await client.createSandbox(options({ id: "watched", lifetime: { maxLifetimeMs: 1000 } }));
  const stop = await fake.waitFor("POST", "/containers/anvia-sandbox-watched/stop");
  assert.equal(sandbox.id, "watched");
  assert.equal(stop.query.t, "1");
  const inspections = fake.seen("GET", "/containers/anvia-sandbox-watched/json");
  assert.ok(inspections.length >= 2, "the run is learnt, then checked again before the stop");
  assert.ok(stop.time - inspections[0].time >= 2990, `stopped ${stop.time - inspections[0].time} ms after the run was learnt`);
});
