// The engine itself: API version negotiation from /_ping (too old, missing, refused), the
// version the client then speaks, nothing listening, and an engine restarted under a live
// sandbox (the operation in flight fails clearly; the next one works on the new engine).
import test from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HANG_MS, DockerSandboxClient, FakeEngine, expectCode, fakeSandbox, frame, frameHeader, notKiller, sleep, startFakeEngine, upgradeHead } from "../helpers/fake-engine.js";

const T = { timeout: HANG_MS }; // a hang fails after minutes; no test races a timer

test("/_ping answers API-Version 1.12: docker_unavailable, saying which version and what is needed", T, async (t) => {
  const fake = await startFakeEngine({ apiVersion: "1.12" });
  t.after(() => fake.close());
  fake.addContainer("v1");
  const client = new DockerSandboxClient({ host: fake.host });
  const err = await expectCode(client.resumeSandbox({ id: "v1" }), "docker_unavailable");
  assert.match(err.message, /1\.12/);
  assert.match(err.message, /1\.40 or later/);
  assert.ok(err.message.includes(fake.socketPath), err.message);
  assert.equal(fake.requests.filter((r) => r.path !== "/_ping").length, 0, "nothing but the ping was sent");
});

test("/_ping without an API-Version header: docker_unavailable", T, async (t) => {
  const fake = await startFakeEngine({ apiVersion: null });
  t.after(() => fake.close());
  fake.addContainer("v2");
  const client = new DockerSandboxClient({ host: fake.host });
  await expectCode(client.resumeSandbox({ id: "v2" }), "docker_unavailable", /did not report a usable API version/);
});

test("/_ping with an API-Version that is not a version: docker_unavailable", T, async (t) => {
  const fake = await startFakeEngine({ apiVersion: "one.forty" });
  t.after(() => fake.close());
  const client = new DockerSandboxClient({ host: fake.host });
  await expectCode(client.pullImage({ image: "x:1" }), "docker_unavailable", /did not report a usable API version/);
});

test("/_ping answered 500: docker_unavailable with the engine's message", T, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  fake.route("GET", "/_ping", { status: 500, json: { message: "daemon is shutting down" } });
  const client = new DockerSandboxClient({ host: fake.host });
  const err = await expectCode(client.pullImage({ image: "x:1" }), "docker_unavailable", /daemon is shutting down/);
  assert.equal(err.details.statusCode, 500);
});

test("/_ping cut before its answer: docker_unavailable, then a retry works", T, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  fake.addContainer("v3");
  fake.route("GET", "/_ping", { destroy: true }, { times: 1 });
  const client = new DockerSandboxClient({ host: fake.host });
  await expectCode(client.resumeSandbox({ id: "v3" }), "docker_unavailable");
  const sandbox = await client.resumeSandbox({ id: "v3" });
  assert.equal(sandbox.id, "v3");
});

test("a failed negotiation is not remembered: once the engine is new enough, the next call pings again", T, async (t) => {
  const fake = await startFakeEngine({ apiVersion: "1.12" });
  t.after(() => fake.close());
  fake.addContainer("v4");
  const client = new DockerSandboxClient({ host: fake.host });
  await expectCode(client.resumeSandbox({ id: "v4" }), "docker_unavailable");
  fake.apiVersion = "1.41";
  const sandbox = await client.resumeSandbox({ id: "v4" });
  assert.equal(sandbox.id, "v4");
  assert.equal(fake.seen("GET", "/_ping").length, 2);
});

test("the client speaks the version the engine reports (1.43 here), on every route", T, async (t) => {
  const fake = await startFakeEngine({ apiVersion: "1.43" });
  t.after(() => fake.close());
  fake.addContainer("v5");
  const client = new DockerSandboxClient({ host: fake.host });
  const sandbox = await client.resumeSandbox({ id: "v5" });
  await sandbox.runtime.exec({ command: "echo", args: ["hi"] });
  fake.addFile("/workspace/f.txt", "f");
  await sandbox.runtime.readFile({ path: "f.txt" });
  const versioned = fake.requests.filter((r) => r.path !== "/_ping");
  assert.ok(versioned.length >= 6);
  for (const r of versioned) assert.equal(r.apiVersion, "1.43", `${r.method} ${r.fullPath}`);
  assert.equal(fake.seen("GET", "/_ping").length, 1, "negotiated once");
});

test("nothing listening at the socket: docker_unavailable naming the endpoint", T, async () => {
  const dir = mkdtempSync(join(tmpdir(), "anvia-nofake-"));
  try {
    const client = new DockerSandboxClient({ host: `unix://${dir}/docker.sock` });
    const err = await expectCode(client.resumeSandbox({ id: "gone" }), "docker_unavailable", /not reachable/);
    assert.ok(err.message.includes(`${dir}/docker.sock`), err.message);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// ---- restarts ----------------------------------------------------------------------------------------

/** An exec start that upgrades, sends `first`, and then waits; resolves when it is in flight. */
function stallingExecStart(first) {
  let resolveInFlight;
  const inFlight = new Promise((r) => (resolveInFlight = r));
  const handler = notKiller(async (req, res, ctx) => {
    ctx.conn.hijack();
    await res.write(upgradeHead());
    if (first) await res.write(first);
    resolveInFlight();
    res.hang();
  });
  return { handler, inFlight };
}

test("engine restarted while an exec waits for output: the exec fails clearly, the next one works", T, async (t) => {
  const { fake, runtime, containerName } = await fakeSandbox(t, { id: "r1" });
  const { handler, inFlight } = stallingExecStart(frame(1, "before restart\n"));
  fake.route("POST", "/exec/:id/start", handler);
  const running = runtime.exec({ command: "sleep", args: ["100"] });
  await inFlight;
  const state = fake.state;
  await fake.close({ removeDir: false });
  // Between frames the cut reads as the end of the stream; the exit code cannot be had.
  await expectCode(running, "docker_unavailable", /not reachable/);

  const fresh = new FakeEngine({ socketPath: fake.socketPath, state });
  await fresh.listen();
  t.after(() => fresh.close());
  assert.ok(state.containers.has(containerName));
  const r = await runtime.exec({ command: "echo", args: ["after", "restart"] });
  assert.equal(r.status, "exited");
  assert.equal(Buffer.from(r.stdout).toString(), "after restart\n");
  fake.addFile("/workspace/kept.txt", "kept");
  assert.equal(Buffer.from(await runtime.readFile({ path: "kept.txt" })).toString(), "kept");
});

test("engine restarted mid-frame: the exec fails with the frame error, the next one works", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t, { id: "r2" });
  const { handler, inFlight } = stallingExecStart(Buffer.concat([frameHeader(1, 100), Buffer.from("half")]));
  fake.route("POST", "/exec/:id/start", handler);
  const running = runtime.exec({ command: "yes" });
  await inFlight;
  await fake.close({ removeDir: false });
  await expectCode(running, "docker_command_failed", /inside a frame/);
  const fresh = new FakeEngine({ socketPath: fake.socketPath, state: fake.state });
  await fresh.listen();
  t.after(() => fresh.close());
  const r = await runtime.exec({ command: "echo", args: ["ok"] });
  assert.equal(Buffer.from(r.stdout).toString(), "ok\n");
});

test("engine restarted while an archive download is in flight: it fails, a later read works", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t, { id: "r3" });
  let inFlight;
  const started = new Promise((r) => (inFlight = r));
  fake.route("GET", "/containers/:name/archive", async (req, res) => {
    await res.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    inFlight();
    res.hang();
  });
  const reading = runtime.readFile({ path: "a.txt" });
  await started;
  await fake.close({ removeDir: false });
  await expectCode(reading, "docker_command_failed", /connection failed/);
  const fresh = new FakeEngine({ socketPath: fake.socketPath, state: fake.state });
  await fresh.listen();
  t.after(() => fresh.close());
  fresh.addFile("/workspace/a.txt", "back");
  assert.equal(Buffer.from(await runtime.readFile({ path: "a.txt" })).toString(), "back");
});

test("an engine that goes away between operations: the next operation reconnects to its successor", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t, { id: "r4" });
  // Kept-alive connections to the old engine are in the client's pool now.
  await runtime.exec({ command: "echo", args: ["1"] });
  await fake.close({ removeDir: false });
  await sleep(20);
  const fresh = new FakeEngine({ socketPath: fake.socketPath, state: fake.state });
  await fresh.listen();
  t.after(() => fresh.close());
  const r = await runtime.exec({ command: "echo", args: ["2"] });
  assert.equal(Buffer.from(r.stdout).toString(), "2\n");
  assert.ok(fresh.seen("POST", "/exec").length >= 1, "the new engine served it");
});

test("an operation while no engine listens fails, and one after the engine is back works", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t, { id: "r5" });
  await fake.close({ removeDir: false });
  await expectCode(runtime.exec({ command: "echo" }), "docker_unavailable", /not reachable/);
  const fresh = new FakeEngine({ socketPath: fake.socketPath, state: fake.state });
  await fresh.listen();
  t.after(() => fresh.close());
  const r = await runtime.exec({ command: "echo", args: ["back"] });
  assert.equal(Buffer.from(r.stdout).toString(), "back\n");
});

// ---- createSandbox against the fake ----------------------------------------------------------------

const CREATE = { image: "fake/image:1", workspace: { type: "ephemeral" }, network: { mode: "none" } };

test("control: createSandbox runs its steps against the fake, in order", T, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  const client = new DockerSandboxClient({ host: fake.host });
  const sandbox = await client.createSandbox({ ...CREATE, id: "c1", files: { "hello.txt": "hi" } });
  assert.equal(sandbox.id, "c1");
  const steps = fake.requests.map((r) => `${r.method} ${r.path}`);
  assert.deepEqual(steps, [
    "GET /_ping",
    "GET /containers/anvia-sandbox-c1/json",
    "GET /images/fake/image:1/json",
    "POST /volumes/create",
    "POST /containers/create",
    // Started first: archive operations on a running container are cheaper.
    "POST /containers/anvia-sandbox-c1/start",
    "PUT /containers/anvia-sandbox-c1/archive",
  ]);
  assert.equal(fake.state.uploads[0].entries.find((e) => e.name === "hello.txt").content.toString(), "hi");
});

test("createSandbox whose start fails with 500: rejected, container and volume rolled back", T, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  fake.route("POST", "/containers/:name/start", { status: 500, json: { message: "cannot start: no cgroup" } });
  const client = new DockerSandboxClient({ host: fake.host });
  const err = await expectCode(client.createSandbox({ ...CREATE, id: "c2" }), "docker_command_failed", /cannot start: no cgroup/);
  assert.equal(err.details.statusCode, 500);
  assert.equal(err.details.message, "cannot start: no cgroup");
  assert.equal(fake.state.containers.size, 0, "container removed");
  assert.equal(fake.state.volumes.size, 0, "volume removed");
});

test("createSandbox whose container-create reply is cut: rejected, and what the engine made is removed by name", T, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  fake.route("POST", "/containers/create", async (req, res, ctx) => {
    // The engine made the container, then the connection broke before the answer.
    const body = req.json();
    ctx.engine.state.containers.set(req.query.name, { Id: "made", Name: `/${req.query.name}`, Config: { Labels: body.Labels }, State: {} });
    res.destroy();
  });
  const client = new DockerSandboxClient({ host: fake.host });
  await expectCode(client.createSandbox({ ...CREATE, id: "c3" }), "docker_command_failed");
  assert.equal(fake.seen("DELETE", "/containers/anvia-sandbox-c3").length, 1);
  assert.equal(fake.state.containers.size, 0);
  assert.equal(fake.state.volumes.size, 0);
});
