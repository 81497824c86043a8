// Engine identity and what the library does with it (issue 15), on a fake engine that
// answers its ping as Podman does (Libpod-Api-Version) or as Docker does: exec input goes
// through the draining wrapper on Podman only, a reset after the output is the end of the
// stream, an exec session Podman already deleted is resolved from its exec_died events,
// and a seccomp profile is sent as a private file's path to a local Podman, refused for a
// remote one, and inline to Docker.
import test from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HANG_MS, DockerSandboxClient, expectCode, frame, isKiller, loopTurns, startFakeEngine, upgradeHead } from "../helpers/fake-engine.js";

const T = { timeout: HANG_MS }; // a hang fails after minutes; no test races a timer
const PODMAN_PING = { "API-Version": "1.41", "Libpod-Api-Version": "4.3.1", Server: "Libpod/4.3.1 (linux)", "Content-Type": "text/plain; charset=utf-8" };
const text = (b) => Buffer.from(b).toString("utf8");

async function engine(t, { podman }) {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  if (podman) fake.route("GET", "/_ping", (req, res) => res.send(200, "OK", PODMAN_PING));
  return fake;
}

async function sandboxOn(t, fake, host = fake.host) {
  fake.addContainer("p1", { running: true });
  const client = new DockerSandboxClient({ host, transport: "engine" });
  return (await client.resumeSandbox({ id: "p1" })).runtime;
}

const commandExecs = (fake) => [...fake.state.execs.values()].filter((e) => !isKiller(e));

test("Podman: a command with input runs behind the draining wrapper; without input, and on Docker, as it is", T, async (t) => {
  for (const podman of [true, false]) {
    const fake = await engine(t, { podman });
    const runtime = await sandboxOn(t, fake);
    fake.execProgram = (exec, stdin) => ({ stdout: stdin, exitCode: 0 });
    const r = await runtime.exec({ command: "cat", args: ["-u"], input: "in" });
    assert.equal(text(r.stdout), "in");
    await runtime.exec({ command: "true" });
    const [withInput, without] = commandExecs(fake).map((e) => e.body);
    if (podman) {
      assert.deepEqual(withInput.Cmd.slice(0, 2), ["sh", "-c"]);
      assert.match(withInput.Cmd[2], /^cat \| \{ "\$@"; s=\$\?; cat >\/dev\/null; exit \$s; \}$/);
      assert.deepEqual(withInput.Cmd.slice(3), ["anvia-input", "cat", "-u"]);
    } else {
      assert.deepEqual(withInput.Cmd, ["cat", "-u"]);
    }
    assert.equal(withInput.AttachStdin, true);
    assert.deepEqual(without.Cmd, ["true"]);
  }
});

test("a reset after the output is the end of the stream: the output and the inspection's exit code", T, async (t) => {
  for (const podman of [true, false]) {
    const fake = await engine(t, { podman });
    const runtime = await sandboxOn(t, fake);
    fake.route("POST", "/exec/:id/start", async (req, res, ctx) => {
      if (isKiller(ctx.exec)) return ctx.next();
      ctx.conn.hijack();
      Object.assign(ctx.exec, { Running: false, ExitCode: 3 });
      res.socket.pause(); // the input stays unread, so closing resets the connection
      await res.write(Buffer.concat([upgradeHead(), frame(1, "out\n"), frame(2, "err\n")]));
      // The library (this process) reads the output before the reset: turns of the event
      // loop, each with its poll phase, however late the timer fires on a busy machine.
      await new Promise((resolve) => setTimeout(resolve, 50));
      await loopTurns(10);
      res.finished = true;
      res.socket.destroy();
    });
    const r = await runtime.exec({ command: "sh", args: ["-c", "echo out; exit 3"], input: "x".repeat(4 << 20) });
    assert.deepEqual([text(r.stdout), text(r.stderr), r.exitCode, r.status], ["out\n", "err\n", 3, "exited"]);
  }
});

test("a reset while the command still runs is a connection failure", T, async (t) => {
  const fake = await engine(t, { podman: false });
  const runtime = await sandboxOn(t, fake);
  fake.route("POST", "/exec/:id/start", async (req, res, ctx) => {
    if (isKiller(ctx.exec)) return ctx.next();
    ctx.conn.hijack();
    Object.assign(ctx.exec, { Running: true }); // never ends
    res.socket.pause();
    await res.write(Buffer.concat([upgradeHead(), frame(1, "partial\n")]));
    await new Promise((resolve) => setTimeout(resolve, 50));
    await loopTurns(10);
    res.finished = true;
    res.socket.destroy();
  });
  await expectCode(runtime.exec({ command: "sleep", args: ["100"], input: "x".repeat(4 << 20) }), "docker_command_failed", /connection reset by peer/);
});

test("Podman: an exec session deleted before its inspection is resolved from exec_died events, when they agree", T, async (t) => {
  const fake = await engine(t, { podman: true });
  const runtime = await sandboxOn(t, fake);
  let codes = ["7"];
  const asked = [];
  fake.route("GET", "/exec/:id/json", (req, res, ctx) => (isKiller(ctx.exec) ? ctx.next() : res.json(404, { message: "no such exec session" })));
  fake.route("GET", "/events", (req, res) => {
    asked.push(req.query);
    const lines = codes.map((c) => JSON.stringify({ Type: "container", Action: "exec_died", Actor: { ID: "cid", Attributes: { containerExitCode: c, name: "anvia-sandbox-p1" } } }));
    lines.push(JSON.stringify({ Type: "container", Action: "exec", Actor: { Attributes: { containerExitCode: "0" } } }));
    res.send(200, lines.join("\n") + "\n", { "Content-Type": "application/json" });
  });
  const r = await runtime.exec({ command: "echo", args: ["hi"] });
  assert.deepEqual([text(r.stdout), r.exitCode], ["hi\n", 7]);
  const filters = JSON.parse(asked[0].filters);
  assert.deepEqual(filters, { container: ["anvia-sandbox-p1"], event: ["exec_died"] });
  assert.ok(Number(asked[0].until) > Number(asked[0].since));
  // Two execs of the container ended meanwhile with different codes: no guess.
  codes = ["1", "0"];
  await expectCode(runtime.exec({ command: "echo", args: ["hi"] }), "docker_command_failed",
    /^Podman did not report the exit code of exec \S+: its inspection failed \(Docker engine request failed: GET \/exec\/\S+\/json \(404\): no such exec session\), and its exec_died events do not say which code is this exec's \(2 candidates\)/);
  // Podman 4 also answers 500 when the session went away during the lookup: the same path.
  codes = ["9"];
  fake.route("GET", "/exec/:id/json", (req, res, ctx) => (isKiller(ctx.exec) ? ctx.next() : res.json(500, { message: "retrieving exec session x from container y: no such exec session" })));
  const r500 = await runtime.exec({ command: "echo", args: ["hi"] });
  assert.equal(r500.exitCode, 9);
  // And the same 404 on Docker is what it says (no events fallback).
  const docker = await engine(t, { podman: false });
  const rt2 = await sandboxOn(t, docker);
  docker.route("GET", "/exec/:id/json", (req, res, ctx) => (isKiller(ctx.exec) ? ctx.next() : res.json(404, { message: "No such exec instance" })));
  await expectCode(rt2.exec({ command: "echo", args: ["hi"] }), "docker_command_failed", /\(404\): No such exec instance/);
});

test("seccomp: inline for Docker; a private file's path for a local Podman, removed once the create is answered; refused for a remote Podman", T, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "anvia-fake-seccomp-"));
  const staging = mkdtempSync(join(tmpdir(), "anvia-fake-seccomp-tmp-"));
  const oldTmp = process.env.TMPDIR;
  process.env.TMPDIR = staging;
  t.after(() => {
    if (oldTmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = oldTmp;
    rmSync(dir, { recursive: true, force: true });
    rmSync(staging, { recursive: true, force: true });
  });
  const profile = join(dir, "p.json");
  writeFileSync(profile, '{\n  "defaultAction": "SCMP_ACT_ALLOW",\n  "syscalls": []\n}\n');
  const options = (id) => ({ id, image: "fake:latest", workspace: { type: "ephemeral" }, network: { mode: "none" }, security: { seccompProfile: { type: "path", path: profile } } });

  for (const podman of [false, true]) {
    const fake = await engine(t, { podman });
    let seen;
    fake.route("POST", "/containers/create", (req, res, ctx) => {
      const opt = req.json().HostConfig.SecurityOpt.find((o) => o.startsWith("seccomp="));
      const value = opt.slice("seccomp=".length);
      // What the engine can read at create: the file is there now.
      seen = { value, content: value.startsWith("/") && existsSync(value) ? readFileSync(value, "utf8") : undefined };
      return ctx.next();
    });
    const client = new DockerSandboxClient({ host: fake.host, transport: "engine" });
    const sb = await client.createSandbox(options(podman ? "sp" : "sd"));
    if (podman) {
      assert.match(seen.value, new RegExp(`^${staging}/anvia-seccomp-[^/]+\\.json$`));
      assert.equal(seen.content, '{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[]}');
      assert.ok(!existsSync(seen.value), "removed after the create");
    } else {
      assert.equal(seen.value, '{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[]}');
    }
    await sb.destroy();
  }

  // A remote Podman (tcp:// here): refused before any container is made, naming why.
  const fake = await engine(t, { podman: true });
  const open = new Set();
  const proxy = net.createServer((s) => {
    const u = net.connect(fake.socketPath);
    open.add(s).add(u);
    s.pipe(u).pipe(s);
    s.on("error", () => u.destroy());
    u.on("error", () => s.destroy());
  });
  await new Promise((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise((resolve) => {
    proxy.close(resolve);
    for (const s of open) s.destroy(); // the client keeps its connection for reuse
  }));
  const remote = new DockerSandboxClient({ host: `tcp://127.0.0.1:${proxy.address().port}`, transport: "engine" });
  const error = await expectCode(remote.createSandbox(options("sr")), "docker_command_failed",
    /^Podman at tcp:\/\/127\.0\.0\.1:\d+ reads a seccomp profile as a path on its own host and cannot take one inline \(containers\/podman#27710\)/);
  assert.match(error.message, new RegExp(profile.replace(/[.]/g, "\\.")));
  assert.equal(fake.seen("POST", "/containers/create").length, 0);
  assert.equal(fake.state.volumes.size, 0, "the ephemeral volume was rolled back");
});
