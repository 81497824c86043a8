// Idle and lifetime limits (issue 18), on the real engine: enforced inside the container,
// so a sandbox whose Node process was SIGKILLed stops itself (checked from this process)
// and resumes with its files and its limits; the lifetime limit stops a busy sandbox;
// activity (short operations, and one long operation) keeps an idle-limited sandbox
// alive; the limits hold on the busybox-only image, with a read-only rootfs and a
// non-root user; a sandbox without limits is made exactly as before.
// Times: an idle limit of 2 s is checked with generous margins, never to the millisecond.
import test from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { DockerSandboxClient } from "../../lib/index.js";
import { BUSYBOX_IMAGE, IMAGE, api, baseOptions, inspectContainer, labelledLeftovers, uniqueId } from "../helpers/docker.js";

const client = new DockerSandboxClient();
const lib = fileURLToPath(new URL("../../lib/index.js", import.meta.url));
const KEEP_ALIVE = ["sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"];
const T = { timeout: 120_000 };

// Stopped, and done stopping: Podman reports a container it is still stopping as not
// running ("stopping"), before its exit is recorded.
const hasStopped = (info) => !info.State.Running && ["exited", "stopped", "dead"].includes(info.State.Status);

// Polls the engine (raw API, no library code) until the container has stopped.
async function waitStopped(name, withinMs) {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const info = await inspectContainer(name);
    if (info === undefined) throw new Error(`${name} is gone`);
    if (hasStopped(info)) return info;
    if (Date.now() > deadline) return undefined;
    await sleep(200);
  }
}

async function logsOf(name) {
  return (await api("GET", `/containers/${name}/logs?stdout=1&stderr=1`)).text;
}

async function removeById(id) {
  for (const c of (await labelledLeftovers(id)).containers) await api("DELETE", `/containers${c}?force=1`);
  for (const v of (await labelledLeftovers(id)).volumes) await api("DELETE", `/volumes/${v}`);
}

test("without limits: the original's command and labels, byte for byte", T, async (t) => {
  const sandbox = await client.createSandbox(baseOptions({ lifetime: {} }));
  t.after(() => sandbox.destroy());
  const info = await inspectContainer(`anvia-sandbox-${sandbox.id}`);
  assert.deepEqual(info.Config.Cmd, KEEP_ALIVE);
  assert.deepEqual(
    Object.keys(info.Config.Labels).filter((k) => k.startsWith("anvia.sandbox.lifetime")),
    [],
  );
});

test("SIGKILL of the Node process that made it: the sandbox stops itself, then resumes with its files and limits", T, async (t) => {
  const id = uniqueId("killed");
  const name = `anvia-sandbox-${id}`;
  t.after(() => removeById(id));
  const source = `
    import { DockerSandboxClient } from ${JSON.stringify(lib)};
    const client = new DockerSandboxClient();
    const sb = await client.createSandbox({ id: ${JSON.stringify(id)}, image: ${JSON.stringify(IMAGE)},
      workspace: { type: "ephemeral" }, network: { mode: "none" }, lifetime: { idleTimeoutMs: 2000 } });
    await sb.runtime.writeTextFile({ path: "notes/kept.txt", text: "written before the crash" });
    await sb.runtime.exec({ command: "true" });
    console.log("READY");
    setInterval(() => {}, 1 << 30);
  `;
  const child = spawn(process.execPath, ["--input-type=module", "-e", source], { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (c) => (stderr += c));
  await new Promise((resolve, reject) => {
    child.stdout.on("data", (c) => String(c).includes("READY") && resolve());
    child.on("exit", (code) => reject(new Error(`child exited (${code}) before it was ready: ${stderr}`)));
  });
  child.kill("SIGKILL");
  await new Promise((resolve) => child.on("exit", resolve));
  assert.equal(child.signalCode, "SIGKILL");

  // Nobody is left to stop it: it stops itself, about 2 s after its last activity.
  const stopped = await waitStopped(name, 30_000);
  assert.ok(stopped, "the sandbox is still running 30 s after its process was killed");
  assert.equal(stopped.State.ExitCode, 0);
  assert.match(await logsOf(name), /anvia-sandbox: idle limit reached, stopping/);

  // It resumes like any stopped sandbox, with its files, and its limits come back.
  const sandbox = await client.resumeSandbox({ id });
  t.after(() => sandbox.destroy());
  assert.equal(
    new TextDecoder().decode(await sandbox.runtime.readFile({ path: "notes/kept.txt" })),
    "written before the crash",
  );
  const [listed] = await client.listSandboxes({ labels: { "anvia.sandbox.id": id } });
  assert.deepEqual(listed.lifetime, { idleTimeoutMs: 2000 });
  const info = await inspectContainer(name);
  assert.equal(info.State.Running, true);
  assert.equal(info.Config.Labels["anvia.sandbox.lifetime.idle-timeout-ms"], "2000");
  // Resumed and left alone, it stops itself again.
  assert.ok(await waitStopped(name, 30_000), "the resumed sandbox did not stop itself");
});

test("activity keeps an idle-limited sandbox running; once left alone it stops", T, async (t) => {
  const sandbox = await client.createSandbox(baseOptions({ lifetime: { idleTimeoutMs: 2000 } }));
  t.after(() => sandbox.destroy());
  const name = `anvia-sandbox-${sandbox.id}`;
  // Short operations of every kind for four times the idle limit.
  const until = Date.now() + 8000;
  let n = 0;
  while (Date.now() < until) {
    const kind = n++ % 3;
    if (kind === 0) assert.equal((await sandbox.runtime.exec({ command: "true" })).exitCode, 0);
    else if (kind === 1) await sandbox.runtime.writeTextFile({ path: `f${n}.txt`, text: "x" });
    else await sandbox.runtime.listFiles();
    await sleep(400);
  }
  assert.equal((await inspectContainer(name)).State.Running, true, "stopped although in use");
  // One operation longer than the limit: in progress is in use.
  const long = await sandbox.runtime.exec({ command: "sleep", args: ["6"] });
  assert.equal(long.exitCode, 0);
  assert.equal((await inspectContainer(name)).State.Running, true, "stopped during a long operation");
  // Left alone, it stops.
  assert.ok(await waitStopped(name, 30_000), "an idle sandbox kept running");
  assert.match(await logsOf(name), /idle limit reached/);
});

test("the lifetime limit stops a busy sandbox", T, async (t) => {
  const sandbox = await client.createSandbox(baseOptions({ lifetime: { maxLifetimeMs: 3000, idleTimeoutMs: 60_000 } }));
  t.after(() => sandbox.destroy());
  const name = `anvia-sandbox-${sandbox.id}`;
  await sandbox.runtime.startProcess({ command: "sh", args: ["-c", "while :; do :; done"] });
  let stopped;
  const deadline = Date.now() + 30_000;
  while (!stopped && Date.now() < deadline) {
    await sandbox.runtime.exec({ command: "true" }).catch(() => undefined); // busy, and in use
    const info = await inspectContainer(name);
    if (hasStopped(info)) stopped = info;
    else await sleep(300);
  }
  assert.ok(stopped, "a busy sandbox outlived its lifetime limit by 27 s");
  assert.match(await logsOf(name), /lifetime limit reached/);
  const [listed] = await client.listSandboxes({ labels: { "anvia.sandbox.id": sandbox.id } });
  assert.equal(listed.state, "stopped");
  assert.deepEqual(listed.lifetime, { idleTimeoutMs: 60_000, maxLifetimeMs: 3000 });
});

for (const [label, extra] of [
  ["the busybox-only image, read-only rootfs, non-root user", { image: BUSYBOX_IMAGE, user: "1000:1000", security: { readonlyRootfs: true } }],
  ["Debian minbase, read-only rootfs, non-root user", { user: "1000:1000", security: { readonlyRootfs: true } }],
]) {
  test(`limits hold on ${label}`, T, async (t) => {
    const sandbox = await client.createSandbox(baseOptions({ ...extra, lifetime: { idleTimeoutMs: 2000 } }));
    t.after(() => sandbox.destroy());
    const name = `anvia-sandbox-${sandbox.id}`;
    const info = await inspectContainer(name);
    assert.equal(info.Config.User, "1000:1000");
    assert.equal(info.HostConfig.ReadonlyRootfs, true);
    // In use for three times the limit, then left alone.
    for (let i = 0; i < 10; i++) {
      assert.equal((await sandbox.runtime.exec({ command: "id", args: ["-u"] })).exitCode, 0);
      await sleep(600);
    }
    assert.equal((await inspectContainer(name)).State.Running, true, "stopped although in use");
    assert.ok(await waitStopped(name, 30_000), "an idle sandbox kept running");
    assert.match(await logsOf(name), /idle limit reached/);
  });
}
