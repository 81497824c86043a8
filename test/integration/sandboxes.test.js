// listSandboxes and pruneSandboxes (issue 18) on the real engine: the list sees
// sandboxes made by this process, by another process and by the original package's exact
// `docker run` (same labels), with their state, image, times, workspace, ports and labels;
// pruning removes exactly what matches, never a caller's volume (not even one a forged
// label names), and a dry run removes nothing. Every call is filtered by a label unique to
// the test, so sandboxes of other suites running on the same engine are never touched.
import test from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { DockerSandboxClient } from "../../lib/index.js";
import { IMAGE, api, baseOptions, inspectContainer, labelledLeftovers, uniqueId, volumeExists } from "../helpers/docker.js";
import { isPodman } from "../helpers/engines.js";

const client = new DockerSandboxClient();
const lib = fileURLToPath(new URL("../../lib/index.js", import.meta.url));
const T = { timeout: 120_000 };
const docker = (...args) => execFileSync("docker", args, { encoding: "utf8" });

async function removeById(id) {
  for (const c of (await labelledLeftovers(id)).containers) await api("DELETE", `/containers${c}?force=1`);
  for (const v of (await labelledLeftovers(id)).volumes) await api("DELETE", `/volumes/${v}`);
}

// A container as the original package's createRunArgs makes it, labelled `run=<tag>`.
function originalSandbox(t, tag, { volume, type = "ephemeral", volumeLabel = true } = {}) {
  const id = uniqueId("orig");
  const name = `anvia-sandbox-${id}`;
  const vol = volume ?? `${name}-workspace-${randomUUID()}`;
  if (volume === undefined) docker("volume", "create", ...(volumeLabel ? ["--label", `anvia.sandbox.id=${id}`] : []), vol);
  t.after(() => {
    spawnSync("docker", ["rm", "-f", name]);
    if (volume === undefined) spawnSync("docker", ["volume", "rm", vol]);
  });
  docker(
    "run", "-d", "--name", name,
    "--mount", `type=volume,src=${vol},dst=/workspace`, "-w", "/workspace",
    "--label", `run=${tag}`,
    "--label", "anvia.sandbox.schema=1",
    "--label", `anvia.sandbox.id=${id}`,
    "--label", "anvia.sandbox.workdir=/workspace",
    "--label", `anvia.sandbox.workspace.type=${type}`,
    "--label", `anvia.sandbox.workspace.volume=${vol}`,
    "--label", "anvia.sandbox.network.mode=bridge",
    "--label", "anvia.sandbox.runtime.command-timeout-ms=30000",
    "--label", "anvia.sandbox.runtime.max-output-bytes=1048576",
    "--label", "anvia.sandbox.runtime.max-file-bytes=10485760",
    "--label", "anvia.sandbox.runtime.max-processes=4",
    "--publish", "127.0.0.1::3000/tcp",
    "--security-opt", "no-new-privileges:true", "--cap-drop", "ALL",
    IMAGE, "sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done",
  );
  return { id, name, volume: vol };
}

test("listSandboxes sees this process's, another process's and the original package's sandboxes", T, async (t) => {
  const tag = randomUUID();
  const mine = await client.createSandbox(
    baseOptions({ labels: { run: tag, who: "me" }, network: { mode: "bridge", ports: [8080] }, lifetime: { maxLifetimeMs: 600_000 } }),
  );
  t.after(() => mine.destroy());
  // Another process makes one and exits without cleaning up.
  const otherId = uniqueId("other");
  t.after(() => removeById(otherId));
  const child = spawnSync(process.execPath, ["--input-type=module", "-e", `
    import { DockerSandboxClient } from ${JSON.stringify(lib)};
    const sb = await new DockerSandboxClient().createSandbox({ id: ${JSON.stringify(otherId)}, image: ${JSON.stringify(IMAGE)},
      workspace: { type: "ephemeral" }, network: { mode: "none" }, labels: { run: ${JSON.stringify(tag)}, who: "other" } });
  `], { encoding: "utf8", timeout: 60_000 });
  assert.equal(child.status, 0, child.stderr);
  const original = originalSandbox(t, tag);
  // A container that only looks like one (wrong name for its id) and a helper-like one
  // (no schema label) are not sandboxes.
  const impostor = `not-a-sandbox-${randomUUID().slice(0, 8)}`;
  t.after(() => spawnSync("docker", ["rm", "-f", impostor, `${impostor}-2`]));
  docker("create", "--name", impostor, "--label", `run=${tag}`, "--label", "anvia.sandbox.schema=1", "--label", `anvia.sandbox.id=${otherId}`, IMAGE, "true");
  docker("create", "--name", `${impostor}-2`, "--label", `run=${tag}`, "--label", `anvia.sandbox.id=${otherId}`, IMAGE, "true");

  const before = Date.now();
  const list = await client.listSandboxes({ labels: { run: tag } });
  const byId = Object.fromEntries(list.map((s) => [s.id, s]));
  assert.deepEqual(Object.keys(byId).sort(), [mine.id, otherId, original.id].sort());

  const m = byId[mine.id];
  assert.equal(m.containerName, `anvia-sandbox-${mine.id}`);
  assert.equal(m.state, "running");
  // The image as the engine names it: Podman qualifies a local image with localhost/.
  assert.equal(m.image, isPodman ? `localhost/${IMAGE}` : IMAGE);
  assert.ok(Math.abs(Date.parse(m.createdAt) - before) < 120_000, m.createdAt);
  assert.equal(m.stoppedAt, undefined);
  assert.equal(m.workdir, "/workspace");
  assert.equal(m.workspace.type, "ephemeral");
  assert.match(m.workspace.volume, new RegExp(`^anvia-sandbox-${mine.id}-workspace-`));
  assert.deepEqual(m.labels, { run: tag, who: "me" });
  assert.deepEqual(m.ports, mine.runtime.publishedPorts.map((p) => ({ ...p })));
  assert.deepEqual(m.lifetime, { maxLifetimeMs: 600_000 });
  assert.deepEqual(byId[otherId].labels, { run: tag, who: "other" });
  assert.equal(byId[otherId].state, "running");
  const o = byId[original.id];
  assert.deepEqual(o.workspace, { type: "ephemeral", volume: original.volume });
  assert.equal(o.ports.length, 1);
  assert.equal(o.ports[0].containerPort, 3000);
  assert.equal(o.lifetime, undefined);

  // The state filter, and what a stopped sandbox reports.
  docker("stop", "-t", "1", original.name);
  const stopped = await client.listSandboxes({ labels: { run: tag }, state: "stopped" });
  assert.deepEqual(stopped.map((s) => s.id), [original.id]);
  assert.equal(stopped[0].exitCode, 0);
  assert.ok(Date.parse(stopped[0].stoppedAt) <= Date.now() + 1000, stopped[0].stoppedAt);
  assert.ok(Date.parse(stopped[0].stoppedAt) >= before - 60_000, stopped[0].stoppedAt);
  assert.deepEqual(stopped[0].ports, []);
  const running = await client.listSandboxes({ labels: { run: tag }, state: "running" });
  assert.deepEqual(running.map((s) => s.id).sort(), [mine.id, otherId].sort());
  // Two labels: both must match.
  assert.deepEqual((await client.listSandboxes({ labels: { run: tag, who: "other" } })).map((s) => s.id), [otherId]);
});

test("pruneSandboxes removes exactly what matches, never a caller's volume; a dry run removes nothing", T, async (t) => {
  const tag = randomUUID();
  const labels = { run: tag };
  // Cleanups run newest first, so the caller's volumes go after the containers using them.
  const cleanups = [];
  t.after(async () => {
    for (const undo of cleanups.reverse()) await undo();
  });
  const callerVolume = `caller-${randomUUID()}`;
  const forgedVolume = `caller-forged-${randomUUID()}`;
  for (const v of [callerVolume, forgedVolume]) {
    docker("volume", "create", v);
    cleanups.push(() => spawnSync("docker", ["volume", "rm", "-f", v]));
  }

  const stoppedEphemeral = await client.createSandbox(baseOptions({ labels }));
  const stoppedCaller = await client.createSandbox(baseOptions({ labels, workspace: { type: "docker-volume", name: callerVolume } }));
  const running = await client.createSandbox(baseOptions({ labels }));
  const other = await client.createSandbox(baseOptions({ labels: { run: `${tag}-not` } }));
  for (const s of [stoppedEphemeral, stoppedCaller, running, other]) cleanups.push(() => s.destroy().catch(() => undefined));
  // An original-style sandbox whose labels call a caller's volume ephemeral (the volume
  // does not carry its id): the container may go, the volume must stay.
  const forged = originalSandbox({ after: (fn) => cleanups.push(fn) }, tag, { volume: forgedVolume });
  docker("stop", "-t", "1", forged.name);
  await stoppedEphemeral.stop();
  await stoppedCaller.stop();
  const ephemeralVolume = (await inspectContainer(`anvia-sandbox-${stoppedEphemeral.id}`)).Config.Labels["anvia.sandbox.workspace.volume"];

  // Stopped for an hour: nothing is.
  let result = await client.pruneSandboxes({ labels, stoppedForMs: 3_600_000 });
  assert.deepEqual(result, { removed: [], failed: [], dryRun: false });

  // Dry run: reports the three stopped ones, removes nothing.
  result = await client.pruneSandboxes({ labels, dryRun: true });
  assert.equal(result.dryRun, true);
  assert.deepEqual(result.removed.map((s) => s.id).sort(), [stoppedEphemeral.id, stoppedCaller.id, forged.id].sort());
  const dry = Object.fromEntries(result.removed.map((s) => [s.id, s]));
  assert.equal(dry[stoppedEphemeral.id].removedVolume, ephemeralVolume);
  assert.equal(dry[stoppedCaller.id].removedVolume, undefined);
  assert.equal(dry[forged.id].removedVolume, undefined);
  for (const s of [stoppedEphemeral, stoppedCaller, running]) assert.ok(await inspectContainer(`anvia-sandbox-${s.id}`));
  assert.ok(await inspectContainer(forged.name));
  assert.equal(await volumeExists(ephemeralVolume), true);

  // For real: the stopped ones go; the running one and the other label stay; of the
  // volumes only the sandbox's own ephemeral one goes.
  result = await client.pruneSandboxes({ labels });
  assert.deepEqual(result.failed, []);
  assert.deepEqual(result.removed.map((s) => s.id).sort(), [stoppedEphemeral.id, stoppedCaller.id, forged.id].sort());
  for (const s of [stoppedEphemeral, stoppedCaller]) assert.equal(await inspectContainer(`anvia-sandbox-${s.id}`), undefined);
  assert.equal(await inspectContainer(forged.name), undefined);
  assert.equal(await volumeExists(ephemeralVolume), false);
  assert.equal(await volumeExists(callerVolume), true);
  assert.equal(await volumeExists(forgedVolume), true);
  assert.equal((await inspectContainer(`anvia-sandbox-${running.id}`)).State.Running, true);
  assert.ok(await inspectContainer(`anvia-sandbox-${other.id}`));

  // createdBeforeMs in the past: nothing; now: the running one too (forced).
  result = await client.pruneSandboxes({ labels, createdBeforeMs: Date.now() - 3_600_000 });
  assert.deepEqual(result.removed, []);
  result = await client.pruneSandboxes({ labels, createdBeforeMs: Date.now() + 60_000 });
  assert.deepEqual(result.removed.map((s) => s.id), [running.id]);
  assert.match(result.removed[0].removedVolume, new RegExp(`^anvia-sandbox-${running.id}-workspace-`));
  assert.equal(await inspectContainer(`anvia-sandbox-${running.id}`), undefined);
  assert.deepEqual(await labelledLeftovers(running.id), { containers: [], volumes: [] });
  assert.ok(await inspectContainer(`anvia-sandbox-${other.id}`));
});
