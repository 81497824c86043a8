// sandbox.fork() (issue 18) on the real engine: the fork has its parent's configuration,
// workspace and filesystem changes, then diverges (a write in one is not seen in the
// other); forks of forks work; parent and forks destroy cleanly in any order and leave no
// container, volume or image; ownership survives the copy (non-root user, read-only
// rootfs, busybox-only image); an idle-limited parent survives being forked; a failed or
// aborted fork leaves nothing behind and the parent running.
import test from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { DockerSandboxClient, DockerSandboxError } from "../../lib/index.js";
import { BUSYBOX_IMAGE, api, baseOptions, dockerExec, inspectContainer, labelledLeftovers, uniqueId } from "../helpers/docker.js";
import { isPodman } from "../helpers/engines.js";

const client = new DockerSandboxClient();
const T = { timeout: 180_000 };
const text = (bytes) => new TextDecoder().decode(bytes);

async function imagesOf(id) {
  const filter = encodeURIComponent(JSON.stringify({ label: [`anvia.sandbox.id=${id}`] }));
  return ((await api("GET", `/images/json?all=1&filters=${filter}`)).json ?? []).map((i) => i.Id);
}

async function assertGone(id) {
  assert.deepEqual(await labelledLeftovers(id), { containers: [], volumes: [] }, `containers or volumes left for ${id}`);
  assert.deepEqual(await imagesOf(id), [], `images left for ${id}`);
}

async function sh(sandbox, script) {
  const r = await sandbox.runtime.exec({ command: "sh", args: ["-c", script] });
  assert.equal(r.exitCode, 0, text(r.stderr));
  return text(r.stdout);
}

test("a fork has its parent's state and configuration, then diverges; both destroy cleanly", T, async (t) => {
  const parent = await client.createSandbox(
    baseOptions({
      env: { GREETING: "hello" },
      labels: { team: "forks" },
      network: { mode: "bridge", ports: [8080] },
      resources: { memoryMb: 256, pidsLimit: 64 },
      runtime: { commandTimeoutMs: 20_000 },
      files: { "src/app.txt": "v1" },
    }),
  );
  t.after(() => parent.destroy());
  await sh(parent, "echo root-change > /root/changed && rm -f /etc/motd && echo ws > notes.txt");

  const fork = await parent.fork({ id: uniqueId("fork") });
  t.after(() => fork.destroy());
  assert.notEqual(fork.id, parent.id);
  assert.equal(fork.state, "running");
  // The parent's workspace and filesystem changes, deletions included.
  assert.equal(text(await fork.runtime.readFile({ path: "src/app.txt" })), "v1");
  assert.equal(await sh(fork, "cat /root/changed notes.txt; [ -e /etc/motd ] && echo motd || echo no-motd"), "root-change\nws\nno-motd\n");
  // Its configuration.
  const p = await inspectContainer(`anvia-sandbox-${parent.id}`);
  const f = await inspectContainer(`anvia-sandbox-${fork.id}`);
  assert.deepEqual(f.Config.Cmd, p.Config.Cmd);
  assert.ok(f.Config.Env.includes("GREETING=hello"));
  assert.equal(f.HostConfig.Memory, 256 * 1024 * 1024);
  assert.equal(f.HostConfig.PidsLimit, 64);
  // The parent's capabilities: Docker's inspection says ["ALL"], Podman's lists each
  // dropped one by name; in the container they are the same sets.
  assert.deepEqual(f.HostConfig.CapDrop, p.HostConfig.CapDrop);
  if (!isPodman) assert.deepEqual(f.HostConfig.CapDrop, ["ALL"]);
  const caps = "grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/1/status";
  assert.equal(await sh(fork, caps), await sh(parent, caps));
  assert.equal(f.Config.Labels.team, "forks");
  assert.equal(f.Config.Labels["anvia.sandbox.runtime.command-timeout-ms"], "20000");
  assert.equal(f.Config.Labels["anvia.sandbox.workspace.type"], "ephemeral");
  assert.equal(f.Config.Labels["anvia.sandbox.fork.parent"], parent.id);
  assert.notEqual(f.Config.Labels["anvia.sandbox.workspace.volume"], p.Config.Labels["anvia.sandbox.workspace.volume"]);
  // Its own port.
  assert.equal(fork.runtime.publishedPorts.length, 1);
  assert.equal(fork.runtime.publishedPorts[0].containerPort, 8080);
  assert.notEqual(fork.runtime.publishedPorts[0].hostPort, parent.runtime.publishedPorts[0].hostPort);
  // Divergence, both ways, in the workspace and outside it.
  await parent.runtime.writeTextFile({ path: "src/app.txt", text: "parent" });
  await fork.runtime.writeTextFile({ path: "src/app.txt", text: "fork" });
  await fork.runtime.writeTextFile({ path: "fork-only.txt", text: "f" });
  await sh(parent, "echo parent > /root/changed");
  assert.equal(text(await parent.runtime.readFile({ path: "src/app.txt" })), "parent");
  assert.equal(text(await fork.runtime.readFile({ path: "src/app.txt" })), "fork");
  assert.equal(await sh(fork, "cat /root/changed"), "root-change\n");
  await assert.rejects(parent.runtime.readFile({ path: "fork-only.txt" }), (e) => e instanceof DockerSandboxError);
  // Stopping one leaves the other running; destroying both leaves nothing.
  await parent.stop();
  assert.equal((await fork.runtime.exec({ command: "true" })).exitCode, 0);
  await fork.destroy();
  await parent.destroy();
  await assertGone(fork.id);
  await assertGone(parent.id);
});

test("forks of forks: any destroy order leaves no image behind", T, async (t) => {
  for (const order of [["a", "b", "c"], ["c", "b", "a"], ["b", "a", "c"]]) {
    const a = await client.createSandbox(baseOptions({ files: { "gen.txt": "a" } }));
    t.after(() => a.destroy());
    await sh(a, "echo a > /root/gen");
    const b = await a.fork();
    t.after(() => b.destroy());
    await sh(b, "echo b > /root/gen && echo b > gen.txt");
    const c = await b.fork();
    t.after(() => c.destroy());
    assert.equal(await sh(c, "cat /root/gen gen.txt"), "b\nb\n");
    assert.equal(await sh(a, "cat /root/gen gen.txt"), "a\na");
    const all = { a, b, c };
    for (const name of order) await all[name].destroy();
    for (const s of [a, b, c]) await assertGone(s.id);
  }
});

test("a non-root sandbox on the busybox image with a read-only rootfs forks with its ownership", T, async (t) => {
  const parent = await client.createSandbox(
    baseOptions({ image: BUSYBOX_IMAGE, user: "1000:1000", security: { readonlyRootfs: true }, files: { "mine.txt": "x" } }),
  );
  t.after(() => parent.destroy());
  await sh(parent, "mkdir -p private && echo s > private/secret && chmod 700 private && chmod 600 private/secret");
  const fork = await parent.fork();
  t.after(() => fork.destroy());
  const listing = (await dockerExec(`anvia-sandbox-${fork.id}`, ["sh", "-c", "cd /workspace && stat -c '%u:%g %a %n' . mine.txt private private/secret"])).stdout;
  assert.equal(listing, "1000:1000 755 .\n1000:1000 644 mine.txt\n1000:1000 700 private\n1000:1000 600 private/secret\n");
  assert.equal(await sh(fork, "id -u; cat private/secret; echo more >> mine.txt && cat mine.txt"), "1000\ns\nxmore\n");
  await fork.destroy();
  await parent.destroy();
  await assertGone(fork.id);
  await assertGone(parent.id);
});

test("an idle-limited parent survives being forked, and so does the fork's limit", T, async (t) => {
  const parent = await client.createSandbox(baseOptions({ lifetime: { idleTimeoutMs: 2000 } }));
  t.after(() => parent.destroy());
  // A workspace that takes a while to copy (the parent stays paused meanwhile).
  await sh(parent, "dd if=/dev/urandom of=big.bin bs=1M count=150 2>/dev/null");
  const forks = [];
  for (let i = 0; i < 3; i++) {
    forks.push(await parent.fork());
    t.after(() => forks[i].destroy());
    await sleep(800);
  }
  assert.equal((await inspectContainer(`anvia-sandbox-${parent.id}`)).State.Running, true);
  assert.equal((await parent.runtime.exec({ command: "true" })).exitCode, 0);
  const info = await inspectContainer(`anvia-sandbox-${forks[0].id}`);
  assert.equal(info.Config.Labels["anvia.sandbox.lifetime.idle-timeout-ms"], "2000");
  assert.equal(await sh(forks[2], "wc -c < big.bin"), "157286400\n");
});

test("fork refuses an id in use and a bad id; an abort at any point rolls back and leaves the parent running", T, async (t) => {
  const parent = await client.createSandbox(baseOptions({ lifetime: { idleTimeoutMs: 60_000 } }));
  t.after(() => parent.destroy());
  await assert.rejects(parent.fork({ id: "Not Valid" }), TypeError);
  await assert.rejects(parent.fork({ id: parent.id }), (e) => e.code === "invalid_state" && /already exists/.test(e.message));
  await sh(parent, "dd if=/dev/zero of=big.bin bs=1M count=200 2>/dev/null");
  let aborted = 0;
  for (const delay of [0, 30, 100, 200, 350, 500, 700, 900, 1200]) {
    const id = uniqueId(`abort${delay}`);
    const controller = new AbortController();
    const reason = new Error(`aborted after ${delay} ms`);
    const timer = setTimeout(() => controller.abort(reason), delay);
    try {
      const fork = await parent.fork({ id, abortSignal: controller.signal });
      await fork.destroy(); // finished first: fine
    } catch (error) {
      assert.equal(error, reason, `${delay} ms: ${error?.stack ?? error} ${error?.errors?.map((e) => e.message)}`);
      aborted++;
    } finally {
      clearTimeout(timer);
    }
    await assertGone(id);
    const p = await inspectContainer(`anvia-sandbox-${parent.id}`);
    assert.equal(p.State.Running, true, `${delay} ms: parent stopped`);
    assert.equal(p.State.Paused, false, `${delay} ms: parent left paused`);
  }
  assert.ok(aborted >= 3, `only ${aborted} forks were aborted in flight`);
  assert.equal((await parent.runtime.exec({ command: "true" })).exitCode, 0);
});
