// sandbox.stats() (issue 18) on the real engine: plausible numbers under a CPU load (one
// busy process shows in the CPU share and its CPU time in the container's, however busy the
// machine), the memory limit as configured, the
// processes counted, network bytes of a request served from the sandbox, and the
// workspace's disk use (with `complete` false when the user cannot read part of it).
import test from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { DockerSandboxClient } from "../../lib/index.js";
import { baseOptions } from "../helpers/docker.js";
import { isPodman } from "../helpers/engines.js";

const client = new DockerSandboxClient();
const sh = async (sandbox, script) => Buffer.from((await sandbox.runtime.exec({ command: "sh", args: ["-c", script] })).stdout).toString().trim();
const T = { timeout: 120_000 };

test("stats under a CPU load: cpu, memory, processes, network and workspace are plausible", T, async (t) => {
  const sandbox = await client.createSandbox(
    baseOptions({ network: { mode: "bridge", ports: [8080] }, resources: { memoryMb: 256 }, files: { "index.html": "<h1>hi</h1>" } }),
  );
  t.after(() => sandbox.destroy());
  const idle = await sandbox.stats();
  assert.equal(typeof idle.sampledAt, "string");
  assert.ok(!Number.isNaN(Date.parse(idle.sampledAt)), idle.sampledAt);
  assert.equal(idle.memory.limitBytes, 256 * 1024 * 1024);
  assert.ok(idle.memory.usedBytes > 0 && idle.memory.usedBytes < 256 * 1024 * 1024, JSON.stringify(idle.memory));
  assert.ok(idle.processes >= 2, JSON.stringify(idle));
  assert.ok(idle.cpu.onlineCpus >= 1);

  await sandbox.runtime.exec({ command: "sh", args: ["-c", "dd if=/dev/zero of=blob.bin bs=1M count=3 2>/dev/null"] });
  await sandbox.runtime.startProcess({ command: "sh", args: ["-c", "echo $$ > /tmp/busy.pid; while :; do :; done"] });
  await sandbox.runtime.startProcess({ command: "busybox", args: ["httpd", "-f", "-p", "8080"] });
  const port = await sandbox.runtime.waitForPort({ containerPort: 8080 });
  const res = await fetch(`http://127.0.0.1:${port.hostPort}/index.html`);
  assert.equal(await res.text(), "<h1>hi</h1>");
  // The busy loop's own CPU time, as the kernel counts it inside (ticks of 10 ms), until it
  // has had 300 ms of CPU: how long that takes depends on how busy the machine is, what the
  // container's counter must then hold does not.
  const ticks = async () => Number(await sh(sandbox, "busybox awk '{ print $14 + $15 }' /proc/$(cat /tmp/busy.pid)/stat"));
  let used = 0;
  while ((used = await ticks()) < 30) await sleep(100);

  const busy = await sandbox.stats();
  // A share of the CPUs over the engine's last interval: some (the loop never sleeps), at
  // most all of them. How much depends on what else the machine runs.
  assert.ok(busy.cpu.percent > 0, `one busy process, cpu ${busy.cpu.percent}%`);
  assert.ok(busy.cpu.totalNs - idle.cpu.totalNs >= used * 10_000_000, `the container's CPU time grew ${busy.cpu.totalNs - idle.cpu.totalNs} ns while one of its processes used ${used} ticks of 10 ms`);
  assert.ok(busy.cpu.percent <= 100 * busy.cpu.onlineCpus + 5, `cpu ${busy.cpu.percent}%`);
  assert.ok(busy.cpu.totalNs > idle.cpu.totalNs);
  assert.ok(busy.processes >= idle.processes + 2, `${idle.processes} -> ${busy.processes}`);
  assert.ok(busy.network.rxBytes > idle.network.rxBytes && busy.network.txBytes > idle.network.txBytes, JSON.stringify(busy.network));
  // Podman 4.3's stats reply counts bytes only (its packet counts are always 0).
  if (!isPodman) assert.ok(busy.network.rxPackets > 0 && busy.network.txPackets > 0);
  assert.ok(busy.workspace.usedBytes >= 3 * 1024 * 1024, JSON.stringify(busy.workspace));
  assert.ok(busy.workspace.usedBytes < 64 * 1024 * 1024, JSON.stringify(busy.workspace));
  assert.equal(busy.workspace.complete, true);
});

test("stats: no network without one; an unreadable directory makes the workspace figure incomplete", T, async (t) => {
  const sandbox = await client.createSandbox(baseOptions({ user: "1000:1000" }));
  t.after(() => sandbox.destroy());
  await sandbox.runtime.exec({ command: "sh", args: ["-c", "mkdir -p locked/inner && echo x > locked/inner/f && chmod 000 locked"] });
  const s = await sandbox.stats();
  assert.deepEqual(s.network, { rxBytes: 0, txBytes: 0, rxPackets: 0, txPackets: 0 });
  assert.equal(s.workspace.complete, false);
  assert.ok(s.workspace.usedBytes > 0);
  await sandbox.stop();
  await assert.rejects(sandbox.stats(), (e) => e.code === "invalid_state");
});
