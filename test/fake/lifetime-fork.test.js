// Issue 18 on the fake engine, for what a real engine will not show on demand: how often an
// idle-limited sandbox signals its container (the cost of activity tracking: at most once
// per idle/4, heartbeats during a long operation, one signal at or after the end of the
// last operation, none without a limit, a create's own steps after its start); a fork whose workspace copy fails (the error
// names cp's complaint; the parent is signalled and unpaused, never signalled while
// paused; everything made is removed); a fork's create body and its image removed on
// destroy; a container list with malformed entries; pruning that fails half-way.
import test from "node:test";
import assert from "node:assert/strict";
import { HANG_MS, DockerSandboxClient, DockerSandboxError, frame, notKiller, sleep, startFakeEngine, until, answerFork } from "../helpers/fake-engine.js";

const T = { timeout: HANG_MS }; // a hang fails after minutes; no test races a timer

async function resumed(t, id, labels = {}, extra = {}) {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  fake.addContainer(id, { labels, running: true, extra });
  fake.route("POST", "/containers/:name/kill", { status: 204 });
  const client = new DockerSandboxClient({ host: fake.host });
  const sandbox = await client.resumeSandbox({ id });
  return { fake, client, sandbox, kills: () => fake.seen("POST", `/containers/anvia-sandbox-${id}/kill`) };
}

test("activity: at most one signal per idle/4 while in use, and one at or after the end of the last operation", T, async (t) => {
  const { fake, sandbox, kills } = await resumed(t, "act", { "anvia.sandbox.lifetime.idle-timeout-ms": "4000" });
  const period = 1000; // idle/4
  const first = fake.requests.length;
  // At least 1.5 s and 20 operations, however long 20 take on this machine.
  const started = Date.now();
  let ops = 0;
  while (Date.now() - started < 1500 || ops < 20) {
    await sandbox.runtime.exec({ command: "true" });
    ops++;
  }
  const ended = Date.now();
  // The signal owed after the last operation comes at most idle/4 after the one before:
  // waited for, however late this machine sends it.
  await until(() => kills().some((k) => k.time >= ended));
  const sent = kills();
  assert.ok(ops >= 20, `${ops} operations`);
  // At most one per idle/4 over the time they span, and one more for the way the fake
  // sees them (a signal a little late, the next on time).
  const span = sent[sent.length - 1].time - sent[0].time;
  const most = Math.floor(span / period) + 2;
  assert.ok(sent.length >= 2 && sent.length <= most, `${sent.length} signals for ${ops} operations in ${ended - started} ms (at most ${most})`);
  for (const k of sent) assert.equal(k.query.signal, "SIGUSR1");
  // The first signal went with the first operation: before the second operation's own
  // requests (which wait for the whole first one), not a period later.
  const order = fake.requests.slice(first);
  const firstKill = order.findIndex((r) => r.method === "POST" && /\/kill$/.test(r.path));
  const execsBefore = order.slice(0, firstKill).filter((r) => r.method === "POST" && /^\/containers\/[^/]+\/exec$/.test(r.path)).length;
  assert.ok(execsBefore <= 1, `no signal when the first operation started: ${execsBefore} operations began before it`);
  assert.ok(sent[sent.length - 1].time >= ended, "no signal after the last operation ended");
  // Nothing in use: no signal in more than idle/4 after the last (a slow machine can only
  // make this look shorter, never fail it).
  await sleep(1200);
  assert.equal(kills().length, sent.length, "signals kept coming with nothing in use");
});

// A create's steps after its container started (the owner lookup, the helper, the `files`
// upload) can outlast a short idle limit: they are activity. The upload waits here until
// three signals came while it was held: a slow machine makes it longer, a create that did
// not signal makes it hang (and fail at the test's timeout).
test("activity: a createSandbox counts from its container's start until it resolves", T, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  fake.route("POST", "/containers/:name/kill", { status: 204 });
  const name = "anvia-sandbox-slowfiles";
  const kills = () => fake.seen("POST", `/containers/${name}/kill`);
  let held;
  fake.route("PUT", "/containers/:name/archive", async (req, res, ctx) => {
    if (req.query.path !== "/" && held === undefined) {
      held = Date.now();
      await sleep(1300);
      await until(() => kills().filter((k) => k.time >= held).length >= 3);
    }
    return ctx.next();
  });
  const client = new DockerSandboxClient({ host: fake.host });
  const sandbox = await client.createSandbox({
    id: "slowfiles",
    image: "fake:latest",
    workspace: { type: "ephemeral" },
    network: { mode: "none" },
    lifetime: { idleTimeoutMs: 1000 },
    files: { "notes.txt": "kept" },
  });
  const resolved = Date.now();
  assert.ok(held !== undefined, "the files were uploaded");
  const start = fake.seen("POST", `/containers/${name}/start`)[0];
  assert.ok(kills()[0].time >= start.time, "no signal before the container ran");
  // And the one owed at its end: the container hears of activity at or after it.
  await until(() => kills().some((k) => k.time >= resolved));
  await sandbox.destroy();
});

test("activity: heartbeats while one long operation runs", T, async (t) => {
  const { fake, sandbox, kills } = await resumed(t, "long", { "anvia.sandbox.lifetime.idle-timeout-ms": "1000" });
  let started;
  // The operation lasts 1.3 s, and on a machine too slow to send three signals 250 ms
  // apart in that time, until the third has come: a slow machine makes it longer, and a
  // tracker that stopped signalling during an operation makes it hang.
  fake.route(
    "POST",
    "/exec/:id/start",
    notKiller(async (req, res, ctx) => {
      await sleep(1300);
      await until(() => kills().filter((k) => k.time >= started).length >= 3);
      return ctx.next();
    }),
  );
  started = Date.now();
  await sandbox.runtime.exec({ command: "sleep", args: ["1"] });
  const ended = Date.now();
  const during = kills().filter((k) => k.time >= started && k.time <= ended);
  assert.ok(during.length >= 3, `${during.length} signals during a ${ended - started} ms operation with idle/4 = 250 ms`);
  // No more often than idle/4, as above (one more for how the fake sees them).
  const most = Math.floor((during[during.length - 1].time - during[0].time) / 250) + 2;
  assert.ok(during.length <= most, `${during.length} signals, at most ${most}`);
});

test("activity: a sandbox without limits never signals its container", T, async (t) => {
  const { sandbox, kills } = await resumed(t, "plain");
  for (let i = 0; i < 20; i++) await sandbox.runtime.exec({ command: "true" });
  await sleep(300);
  assert.equal(kills().length, 0);
});

function forkRoutes(fake, { waitStatus = 0 } = {}) {
  answerFork(fake, { waitStatus });
  fake.route("GET", "/containers/:name/logs", {
    status: 200,
    body: Buffer.concat([frame(2, "cp: can't open '/anvia-fork-from/secret': Permission denied\n")]),
  });
  fake.route("DELETE", "/images/:name*", { status: 200, json: [{ Deleted: "sha256:committed" }] });
}

test("fork: a failed copy names cp's complaint, unpauses the parent (signalled once, just before) and removes what it made", T, async (t) => {
  const { fake, sandbox } = await resumed(t, "par", { "anvia.sandbox.lifetime.idle-timeout-ms": "60000" }, { Image: "sha256:base" });
  forkRoutes(fake, { waitStatus: 1 });
  await assert.rejects(sandbox.fork({ id: "child" }), (error) => {
    assert.ok(error instanceof DockerSandboxError, String(error));
    assert.equal(
      error.message,
      "Unable to copy the sandbox workspace (cp exited with 1): cp: can't open '/anvia-fork-from/secret': Permission denied",
    );
    return true;
  });
  const order = fake.requests.map((r) => `${r.method} ${r.path}`);
  const at = (re) => order.findIndex((line) => re.test(line));
  const pause = at(/^POST \/containers\/anvia-sandbox-par\/pause$/);
  const unpause = at(/^POST \/containers\/anvia-sandbox-par\/unpause$/);
  assert.ok(pause >= 0 && unpause > pause, order.join("\n"));
  const killsWhilePaused = order.slice(pause, unpause).filter((l) => /anvia-sandbox-par\/kill/.test(l));
  assert.deepEqual(killsWhilePaused, ["POST /containers/anvia-sandbox-par/kill"], order.join("\n"));
  assert.equal(order[unpause - 1], "POST /containers/anvia-sandbox-par/kill");
  // The helper was made from the base image, as root, cp -a, only its capabilities.
  const helperReq = fake.seen("POST", "/containers/create").find((r) => r.json().Entrypoint?.[0] === "/bin/cp");
  const helperName = helperReq.query.name;
  assert.match(helperName, /^anvia-fork-copy-[0-9a-f-]{36}$/); // never a sandbox's container name
  const helper = helperReq.json();
  assert.equal(helper.Image, "sha256:base");
  assert.deepEqual(helper.Cmd, ["-a", "/anvia-fork-from/.", "/anvia-fork-to/"]);
  assert.equal(helper.User, "0:0");
  assert.deepEqual(helper.HostConfig.CapDrop, ["ALL"]);
  assert.equal(helper.HostConfig.NetworkMode, "none");
  assert.equal(helper.HostConfig.Mounts[0].ReadOnly, true);
  // Rolled back: helper, volume and image gone; no fork container was made.
  assert.ok(fake.seen("DELETE", `/containers/${helperName}`).length >= 1);
  assert.ok(fake.seen("DELETE", /^\/volumes\/anvia-sandbox-child-workspace-/).length === 1);
  assert.equal(fake.seen("DELETE", "/images/sha256:committed").length, 1);
  assert.equal(fake.state.containers.has("anvia-sandbox-child"), false);
  assert.equal(fake.state.containers.has(helperName), false);
  // The parent is still usable.
  assert.equal((await sandbox.runtime.exec({ command: "true" })).exitCode, 0);
});

test("fork: a name taken between the check and the create is refused, and the rollback leaves that container alone", T, async (t) => {
  const { fake, sandbox } = await resumed(t, "racer", {}, { Image: "sha256:base" });
  forkRoutes(fake);
  fake.route("POST", "/containers/create", (req, res, ctx) => {
    if (req.query.name !== "anvia-sandbox-taken") return ctx.next();
    fake.addContainer("taken", { running: true }); // someone else's, made just now
    res.json(409, { message: 'Conflict. The container name "/anvia-sandbox-taken" is already in use.' });
  });
  await assert.rejects(sandbox.fork({ id: "taken" }), (e) => e instanceof DockerSandboxError && /already in use/.test(e.message));
  assert.equal(fake.seen("DELETE", "/containers/anvia-sandbox-taken").length, 0);
  assert.ok(fake.state.containers.has("anvia-sandbox-taken"));
  assert.equal(fake.seen("DELETE", "/images/sha256:committed").length, 1);
});

test("fork: the fork's body is its parent's configuration on the committed image; destroy removes its image", T, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  fake.route("POST", "/containers/:name/kill", { status: 204 });
  const parent = fake.addContainer("base", { labels: { team: "x", "anvia.sandbox.lifetime.max-lifetime-ms": "600000" }, running: true });
  Object.assign(parent, { Image: "sha256:base" });
  Object.assign(parent.Config, { Env: ["A=1"], Cmd: ["sh", "-c", "loop"], WorkingDir: "/workspace", User: "1000:1000" });
  // PortBindings as Podman reports them: the host port it chose, which the parent holds.
  Object.assign(parent.HostConfig, {
    ReadonlyRootfs: true,
    Memory: 1048576,
    CapDrop: ["ALL"],
    NetworkMode: "none",
    PortBindings: { "8080/tcp": [{ HostIp: "127.0.0.1", HostPort: "40331" }] },
  });
  parent.NetworkSettings = { Ports: { "8080/tcp": [{ HostIp: "127.0.0.1", HostPort: "40331" }] } };
  const sandbox = await new DockerSandboxClient({ host: fake.host }).resumeSandbox({ id: "base" });
  forkRoutes(fake);
  const fork = await sandbox.fork({ id: "kid" });
  assert.equal(fork.id, "kid");
  const body = fake.seen("POST", "/containers/create").find((r) => r.query.name === "anvia-sandbox-kid").json();
  assert.equal(body.Image, "sha256:committed");
  assert.deepEqual(body.Cmd, ["sh", "-c", "loop"]);
  assert.deepEqual(body.Env, ["A=1"]);
  assert.equal(body.User, "1000:1000");
  assert.equal(body.HostConfig.ReadonlyRootfs, true);
  assert.equal(body.HostConfig.Memory, 1048576);
  assert.deepEqual(body.HostConfig.PortBindings, { "8080/tcp": [{ HostIp: "127.0.0.1", HostPort: "" }] }, "new host ports");
  assert.equal(body.Labels.team, "x");
  assert.equal(body.Labels["anvia.sandbox.id"], "kid");
  assert.equal(body.Labels["anvia.sandbox.workspace.type"], "ephemeral");
  assert.equal(body.Labels["anvia.sandbox.fork.image"], "sha256:committed");
  assert.equal(body.Labels["anvia.sandbox.fork.parent"], "base");
  assert.equal(body.Labels["anvia.sandbox.fork.base-image"], "sha256:base");
  assert.equal(body.Labels["anvia.sandbox.lifetime.max-lifetime-ms"], "600000");
  assert.deepEqual(body.HostConfig.Mounts, [
    { Type: "volume", Source: body.Labels["anvia.sandbox.workspace.volume"], Target: "/workspace" },
  ]);
  // The commit said whose image it is; the parent was paused around it.
  assert.deepEqual(fake.seen("POST", "/commit")[0].json(), { Labels: { "anvia.sandbox.id": "kid" } });
  assert.equal(fake.seen("POST", "/commit")[0].query.pause, "false");
  await fork.destroy();
  const order = fake.requests.map((r) => `${r.method} ${r.path}`);
  const removed = order.filter((l) => l.startsWith("DELETE")).slice(-3);
  assert.deepEqual(removed, [
    "DELETE /containers/anvia-sandbox-kid",
    `DELETE /volumes/${body.Labels["anvia.sandbox.workspace.volume"]}`,
    "DELETE /images/sha256:committed",
  ]);
});

test("listSandboxes skips what is not a sandbox and reads status lines; a reply that is not a list fails", T, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  const good = (id, extra = {}) => ({
    Id: `x${id}`,
    Names: [`/anvia-sandbox-${id}`],
    Image: "img",
    Created: 1700000000,
    State: "exited",
    Status: "Exited (137) 3 hours ago",
    Labels: {
      "anvia.sandbox.schema": "1",
      "anvia.sandbox.id": id,
      "anvia.sandbox.workdir": "/w",
      "anvia.sandbox.workspace.type": "docker-volume",
      "anvia.sandbox.workspace.volume": "mine",
      "anvia.sandbox.lifetime.idle-timeout-ms": "nope",
      team: "t",
    },
    Ports: [
      { IP: "127.0.0.1", PrivatePort: 80, PublicPort: 40001, Type: "tcp" },
      { IP: "0.0.0.0", PrivatePort: 81, PublicPort: 40002, Type: "tcp" },
      { IP: "127.0.0.1", PrivatePort: 82, Type: "tcp" },
      { IP: "127.0.0.1", PrivatePort: 99999, PublicPort: 1, Type: "tcp" },
    ],
    ...extra,
  });
  const list = [
    good("ok1"),
    good("ok2", { State: "created", Status: "Created", Ports: "garbage" }),
    good("ok7", { State: "running", Status: "Up 2 minutes" }),
    good("ok8", { State: "running", Status: "Up 1 second", Ports: "garbage" }),
    good("Bad Id"),
    good("ok3", { Names: ["/someone-else"] }),
    good("ok4", { Labels: null }),
    good("ok5", { State: "zombie" }),
    { Labels: { "anvia.sandbox.schema": "2", "anvia.sandbox.id": "ok6" }, Names: ["/anvia-sandbox-ok6"], State: "running" },
    42,
    null,
  ];
  fake.route("GET", "/containers/json", { status: 200, json: list }, { times: 1 });
  const client = new DockerSandboxClient({ host: fake.host });
  const now = Date.now();
  const got = await client.listSandboxes();
  const after = Date.now();
  assert.deepEqual(got.map((s) => s.id), ["ok1", "ok2", "ok7", "ok8"]);
  const [a, b, c, d] = got;
  assert.equal(a.state, "stopped");
  assert.equal(a.exitCode, 137);
  assert.equal(a.createdAt, "2023-11-14T22:13:20.000Z");
  // "3 hours": at least 2.5 h before the listing, which took what it took on this machine.
  const stoppedAt = Date.parse(a.stoppedAt);
  assert.ok(stoppedAt >= now - 2.5 * 3600_000 - 5000 && stoppedAt <= after - 2.5 * 3600_000 + 5000, `${now - stoppedAt} ms before the call, which took ${after - now} ms`);
  assert.deepEqual(a.workspace, { type: "docker-volume", name: "mine" });
  assert.deepEqual(a.labels, { team: "t" });
  assert.equal(a.lifetime, undefined);
  // A stopped sandbox has no ports in effect (Podman lists the bindings of its last run).
  assert.deepEqual(a.ports, []);
  assert.equal(b.state, "stopped");
  assert.equal(b.stoppedAt, undefined);
  assert.deepEqual(b.ports, []);
  // A running one: those on 127.0.0.1 over tcp with a host port in range.
  assert.equal(c.state, "running");
  assert.deepEqual(c.ports, [{ containerPort: 80, host: "127.0.0.1", hostPort: 40001, protocol: "tcp" }]);
  assert.deepEqual(d.ports, []);
  // The label filter sent.
  const filters = JSON.parse(fake.seen("GET", "/containers/json")[0].query.filters);
  assert.deepEqual(filters, { label: ["anvia.sandbox.schema=1"] });
  assert.equal(fake.seen("GET", "/containers/json")[0].query.all, "1");

  fake.route("GET", "/containers/json", { status: 200, json: { not: "a list" } }, { times: 1 });
  await assert.rejects(client.listSandboxes(), (e) => e.code === "docker_command_failed" && e.message === "Docker returned an invalid container list.");
});

test("pruneSandboxes: a volume that is not the sandbox's stays; a removal that fails is reported, the rest go on", T, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  const entry = (id, volume) => ({
    Names: [`/anvia-sandbox-${id}`],
    Image: "img",
    Created: 1700000000,
    State: "exited",
    Status: "Exited (0) 2 days ago",
    Labels: {
      "anvia.sandbox.schema": "1",
      "anvia.sandbox.id": id,
      "anvia.sandbox.workspace.type": "ephemeral",
      "anvia.sandbox.workspace.volume": volume,
    },
  });
  fake.route("GET", "/containers/json", { status: 200, json: [entry("a", "vol-a"), entry("b", "vol-b"), entry("c", "vol-c")] });
  fake.state.volumes.set("vol-a", { Name: "vol-a", Labels: { "anvia.sandbox.id": "a" } });
  fake.state.volumes.set("vol-b", { Name: "vol-b", Labels: { "anvia.sandbox.id": "someone-else" } });
  fake.state.volumes.set("vol-c", { Name: "vol-c", Labels: { "anvia.sandbox.id": "c" } });
  for (const id of ["a", "b", "c"]) fake.addContainer(id);
  fake.route("DELETE", "/containers/anvia-sandbox-c", { status: 500, json: { message: "removal in progress" } });
  const client = new DockerSandboxClient({ host: fake.host });

  const dry = await client.pruneSandboxes({ dryRun: true, stoppedForMs: 86_400_000 });
  assert.deepEqual(dry.removed.map((s) => [s.id, s.removedVolume]), [["a", "vol-a"], ["b", undefined], ["c", "vol-c"]]);
  assert.equal(fake.seen("DELETE").length, 0);

  const result = await client.pruneSandboxes({ stoppedForMs: 86_400_000 });
  assert.deepEqual(result.removed.map((s) => s.id), ["a", "b"]);
  assert.equal(result.failed.length, 1);
  assert.equal(result.failed[0].id, "c");
  assert.ok(result.failed[0].error instanceof DockerSandboxError);
  assert.equal(result.failed[0].error.message, "Unable to remove Docker sandbox.");
  assert.equal(result.failed[0].error.details.message, "removal in progress");
  assert.deepEqual([...fake.state.volumes.keys()].sort(), ["vol-b", "vol-c"]);
  // Stopped containers are removed without force (a resumed one is refused, not killed).
  assert.equal(fake.seen("DELETE", "/containers/anvia-sandbox-a")[0].query.force, undefined);
  // "2 days ago" is at least 47.5 hours: not yet three days.
  assert.deepEqual((await client.pruneSandboxes({ stoppedForMs: 3 * 86_400_000 })).removed, []);
});

test("fork: a parent that asked for a runtime by name forks under it; one that did not forks under the daemon's default", T, async (t) => {
  for (const [labels, hostRuntime, sent, reported] of [
    [{ "anvia.sandbox.container-runtime": "runsc" }, "runsc", "runsc", "runsc"],
    [{ "anvia.sandbox.container-runtime": "default" }, "runc", undefined, "default"],
    [{}, "runc", undefined, "runc"], // made before the label: reported as resume reports it
  ]) {
    const { fake, sandbox } = await resumed(t, "rt", labels, { Image: "sha256:base" });
    fake.state.containers.get("anvia-sandbox-rt").HostConfig.Runtime = hostRuntime;
    forkRoutes(fake);
    const fork = await sandbox.fork({ id: "rt-kid" });
    const body = fake.seen("POST", "/containers/create").find((r) => r.query.name === "anvia-sandbox-rt-kid").json();
    assert.equal(body.HostConfig.Runtime, sent);
    assert.equal(body.Labels["anvia.sandbox.container-runtime"], reported);
    assert.equal(fork.inspector({ files: true }).containerRuntime, reported);
  }
});

test("fork rollback: a helper the engine will not remove while it exits (Podman's 500) is asked again, and nothing is reported", T, async (t) => {
  const { fake, sandbox } = await resumed(t, "race", {}, { Image: "sha256:base" });
  forkRoutes(fake, { waitStatus: 1 });
  const improper = { status: 500, json: { message: "cannot remove container x as it could not be stopped: sending SIGKILL to container x: container state improper: stopped" } };
  fake.route("DELETE", "/containers/:name", (req, res, ctx) =>
    req.params.name.startsWith("anvia-fork-copy-") && fake.seen("DELETE", `/containers/${req.params.name}`).length <= 2
      ? res.json(improper.status, improper.json)
      : ctx.next(),
  );
  await assert.rejects(sandbox.fork({ id: "race-kid" }), (error) => {
    assert.ok(error instanceof DockerSandboxError, `a plain error, not an AggregateError: ${error}`);
    assert.match(error.message, /^Unable to copy the sandbox workspace/);
    return true;
  });
  const removals = fake.requests.filter((r) => r.method === "DELETE" && r.path.startsWith("/containers/anvia-fork-copy-"));
  assert.equal(removals.length, 3, "refused twice, removed the third time");
  assert.equal(fake.requests.filter((r) => r.method === "DELETE" && r.path.startsWith("/volumes/")).length, 1);
});
