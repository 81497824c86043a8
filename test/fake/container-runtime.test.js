// containerRuntime (upstream 1.1.2) against the fake engine: the daemon check through
// GET /info at its place in the create order (after the container, image and volume checks,
// before anything is made), upstream's three messages and the runtime_not_found code,
// HostConfig.Runtime and the anvia.sandbox.container-runtime label, the inspector's
// containerRuntime, and resumeSandbox's fallback (label, then HostConfig.Runtime, then
// "default"). The real runtimes (gVisor's runsc, crun) are in test/integration/runtimes.test.js.
import test from "node:test";
import assert from "node:assert/strict";
import { DockerSandboxClient, DockerSandboxError, startFakeEngine } from "../helpers/fake-engine.js";

const T = { timeout: 30_000 };
const base = { image: "img", workspace: { type: "ephemeral" }, network: { mode: "none" } };
const INFO = { ID: "fake", Runtimes: { runc: { path: "runc" }, "io.containerd.runc.v2": { path: "runc" }, runsc: { path: "/usr/bin/runsc", runtimeArgs: ["--network=none"] } } };

async function engine(t, info = { status: 200, json: INFO }) {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  fake.route("GET", "/info", info);
  return { fake, client: new DockerSandboxClient({ host: fake.host }) };
}

const steps = (fake) =>
  fake.requests.filter((r) => r.path !== "/_ping").map((r) => `${r.method} ${r.path}`);

async function refused(promise, code, message) {
  await assert.rejects(promise, (error) => {
    assert.ok(error instanceof DockerSandboxError, String(error));
    assert.equal(error.code, code);
    assert.equal(error.message, message);
    return true;
  });
}

test("a registered runtime: checked after the container, image and volume checks, sent as HostConfig.Runtime, labelled, inspected", T, async (t) => {
  const { fake, client } = await engine(t);
  const sandbox = await client.createSandbox({ ...base, id: "gv", containerRuntime: "runsc" });
  const order = steps(fake);
  assert.deepEqual(order.slice(0, 5), [
    "GET /containers/anvia-sandbox-gv/json",
    "GET /images/img/json",
    "GET /info",
    "POST /volumes/create",
    "POST /containers/create",
  ]);
  const body = fake.seen("POST", "/containers/create")[0].json();
  assert.equal(body.HostConfig.Runtime, "runsc");
  assert.equal(body.Labels["anvia.sandbox.container-runtime"], "runsc");
  assert.equal(sandbox.inspector({ files: true }).containerRuntime, "runsc");
  // Resumed: from the label.
  const again = await client.resumeSandbox({ id: "gv" });
  assert.equal(again.inspector({ ports: true }).containerRuntime, "runsc");
});

test("omitted or \"default\": no daemon check, no HostConfig.Runtime, the label says default", T, async (t) => {
  for (const extra of [{}, { containerRuntime: "default" }]) {
    const { fake, client } = await engine(t);
    const sandbox = await client.createSandbox({ ...base, ...extra });
    assert.equal(fake.seen("GET", "/info").length, 0, "GET /info was not asked");
    const body = fake.seen("POST", "/containers/create")[0].json();
    assert.equal("Runtime" in body.HostConfig, false);
    assert.equal(body.Labels["anvia.sandbox.container-runtime"], "default");
    assert.equal(sandbox.inspector({ files: true }).containerRuntime, "default");
  }
});

test("a runtime the daemon does not have: runtime_not_found, quoted as JSON.stringify does, and nothing is made", T, async (t) => {
  const { fake, client } = await engine(t);
  for (const [name, quoted] of [
    ["kata", '"kata"'],
    ['we"ird\\', '"we\\"ird\\\\"'],
    ["run\0sc", '"run\\u0000sc"'],
    ["tab\there\n", '"tab\\there\\n"'],
  ]) {
    await refused(
      client.createSandbox({ ...base, containerRuntime: name }),
      "runtime_not_found",
      `Docker runtime is not registered in the daemon: ${quoted}. Install the runtime (for gVisor: runsc install) and restart the Docker daemon.`,
    );
  }
  assert.equal(fake.seen("POST", "/volumes/create").length, 0);
  assert.equal(fake.seen("POST", "/containers/create").length, 0);
});

test("a named volume is checked before the runtime", T, async (t) => {
  const { fake, client } = await engine(t);
  await refused(
    client.createSandbox({ ...base, workspace: { type: "docker-volume", name: "absent" }, containerRuntime: "kata" }),
    "volume_not_found",
    "Docker volume does not exist: absent",
  );
  assert.equal(fake.seen("GET", "/info").length, 0);
});

test("the daemon's info fails or makes no sense: upstream's messages, docker_command_failed", T, async (t) => {
  for (const [reply, message] of [
    [{ status: 500, json: { message: "boom" } }, "Unable to inspect Docker runtimes."],
    [{ status: 200, body: "{not json" }, "Docker returned invalid runtime metadata."],
    [{ status: 200, json: { ID: "x" } }, "Docker returned invalid runtime metadata."],
    [{ status: 200, json: { Runtimes: ["runsc"] } }, "Docker returned invalid runtime metadata."],
    [{ status: 200, json: [1, 2] }, "Docker returned invalid runtime metadata."],
  ]) {
    const { fake, client } = await engine(t, reply);
    await refused(client.createSandbox({ ...base, containerRuntime: "runsc" }), "docker_command_failed", message);
    assert.equal(fake.seen("POST", "/volumes/create").length, 0);
  }
});

test("resumeSandbox: the label, else HostConfig.Runtime, else default", T, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  const client = new DockerSandboxClient({ host: fake.host });
  fake.addContainer("labelled", { labels: { "anvia.sandbox.container-runtime": "crun" } });
  fake.addContainer("old").HostConfig.Runtime = "runc";
  fake.addContainer("bare");
  fake.addContainer("empty", { labels: { "anvia.sandbox.container-runtime": "" } }).HostConfig.Runtime = "runsc";
  const got = {};
  for (const id of ["labelled", "old", "bare", "empty"]) {
    got[id] = (await client.resumeSandbox({ id })).inspector({ files: true }).containerRuntime;
  }
  assert.deepEqual(got, { labelled: "crun", old: "runc", bare: "default", empty: "runsc" });
});

// Podman lists the runtimes of its containers.conf in /info, but its Docker-compatible create
// does not apply HostConfig.Runtime (Podman 4.3.1 runs the container under its default
// runtime): refused at the runtime check, before anything is made, rather than run a sandbox
// under a weaker runtime than the one asked for.
test("on Podman a runtime other than the default is refused before anything is made", T, async (t) => {
  const { fake, client } = await engine(t);
  fake.route("GET", "/_ping", (req, res) =>
    res.send(200, "OK", { "API-Version": "1.41", "Libpod-Api-Version": "4.3.1", Server: "Libpod/4.3.1 (linux)", "Content-Type": "text/plain; charset=utf-8" }),
  );
  await refused(
    client.createSandbox({ ...base, id: "pm", containerRuntime: "runsc" }),
    "runtime_not_found",
    `Podman at ${fake.host} does not apply containerRuntime through its Docker-compatible API (the container would run under Podman's default runtime, not runsc). Set the runtime in Podman's containers.conf ([engine] runtime), or use Docker.`,
  );
  const made = steps(fake).filter((s) => s.startsWith("POST "));
  assert.deepEqual(made, [], "nothing was made");
  // Without containerRuntime, Podman creates as before.
  const sandbox = await client.createSandbox({ ...base, id: "pm2" });
  assert.equal(sandbox.inspector({ files: true }).containerRuntime, "default");
});
