// The sandbox lifecycle on a real engine: every create option reaches the container as
// intended, rollback and abort leave nothing behind, stop/resume keeps the workspace,
// destroy removes what the sandbox owns and nothing else, and a container made by the
// original package's exact `docker run` resumes.
import test from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DockerSandboxClient, DockerSandboxError } from "../../lib/index.js";
import { IMAGE, api, baseOptions, dockerExec, inspectContainer, labelledLeftovers, uniqueId, volumeExists } from "../helpers/docker.js";
import { IMPLEMENTATION, imageName } from "../helpers/engines.js";

const client = new DockerSandboxClient();

async function assertNothingLeft(id) {
  const left = await labelledLeftovers(id);
  assert.deepEqual(left, { containers: [], volumes: [] }, `leftovers for ${id}`);
}

test("create with every option: the engine's inspection shows each field", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "anvia-seccomp-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const profilePath = join(dir, "profile.json");
  writeFileSync(profilePath, '{\n  "defaultAction": "SCMP_ACT_ALLOW",\n  "syscalls": []\n}\n');
  const id = uniqueId("all");
  const sandbox = await client.createSandbox({
    id,
    image: IMAGE,
    workdir: "/work/dir",
    workspace: { type: "ephemeral" },
    network: { mode: "bridge", ports: [8080, 9090] },
    files: { "readme.md": "# hi\n", "bin/tool": new Uint8Array([0, 1, 2, 255]) },
    directories: ["empty/nested"],
    env: { GREETING: "hello world", EMPTY: "" },
    user: "1000:1000",
    labels: { team: "agents", "com.example/x": "y" },
    resources: { memoryMb: 256, cpus: 1.5, pidsLimit: 128, sharedMemoryMb: 32 },
    runtime: { commandTimeoutMs: 5000, maxOutputBytes: 1000, maxFileBytes: 2000, maxProcesses: 2 },
    security: {
      readonlyRootfs: true,
      noNewPrivileges: true,
      seccompProfile: { type: "path", path: profilePath },
      dropCapabilities: ["ALL"],
      addCapabilities: ["CHOWN"],
    },
  });
  t.after(() => sandbox.destroy());
  assert.equal(sandbox.id, id);
  assert.equal(sandbox.state, "running");
  const info = await inspectContainer(`anvia-sandbox-${id}`);
  assert.equal(info.Name, `/anvia-sandbox-${id}`);
  assert.equal(info.State.Running, true);
  assert.equal(info.Config.Image, imageName(IMAGE));
  assert.deepEqual(info.Config.Cmd, ["sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"]);
  assert.equal(info.Config.WorkingDir, "/work/dir");
  assert.ok(info.Config.Env.includes("GREETING=hello world"));
  assert.ok(info.Config.Env.includes("EMPTY="));
  assert.equal(info.Config.User, "1000:1000");
  const volume = info.Config.Labels["anvia.sandbox.workspace.volume"];
  assert.match(volume, new RegExp(`^anvia-sandbox-${id}-workspace-[0-9a-f-]{36}$`));
  assert.deepEqual(
    Object.fromEntries(Object.entries(info.Config.Labels).sort()),
    Object.fromEntries(
      Object.entries({
        team: "agents",
        "com.example/x": "y",
        "anvia.sandbox.schema": "1",
        "anvia.sandbox.id": id,
        "anvia.sandbox.workdir": "/work/dir",
        "anvia.sandbox.workspace.type": "ephemeral",
        "anvia.sandbox.workspace.volume": volume,
        "anvia.sandbox.network.mode": "bridge",
        "anvia.sandbox.runtime.command-timeout-ms": "5000",
        "anvia.sandbox.runtime.max-output-bytes": "1000",
        "anvia.sandbox.runtime.max-file-bytes": "2000",
        "anvia.sandbox.runtime.max-processes": "2",
        "anvia.sandbox.container-runtime": "default", // upstream 1.1.2's label
      }).sort(),
    ),
  );
  assert.deepEqual(Object.keys(info.Config.ExposedPorts).sort(), ["8080/tcp", "9090/tcp"]);
  const hc = info.HostConfig;
  // Engine-specific reports of the same state: Docker lists the volume under Mounts and
  // keeps the requested binding (any host port); Podman lists the volume under Binds and
  // fills in the host port it chose. The mount itself is checked from inside below.
  if (IMPLEMENTATION === "podman") {
    assert.deepEqual(hc.Binds.map((b) => b.split(":").slice(0, 2)), [[volume, "/work/dir"]]);
    assert.deepEqual(hc.PortBindings["8080/tcp"].map((b) => b.HostIp), ["127.0.0.1"]);
  } else {
    assert.deepEqual(
      hc.Mounts.map((m) => [m.Type, m.Source, m.Target]),
      [["volume", volume, "/work/dir"]],
    );
    assert.deepEqual(hc.PortBindings["8080/tcp"], [{ HostIp: "127.0.0.1", HostPort: "" }]);
  }
  assert.equal(hc.NetworkMode, "bridge");
  assert.equal(hc.Memory, 256 * 1024 * 1024);
  assert.equal(hc.NanoCpus, 1_500_000_000);
  assert.equal(hc.PidsLimit, 128);
  assert.equal(hc.ShmSize, 32 * 1024 * 1024);
  assert.equal(hc.ReadonlyRootfs, true);
  if (IMPLEMENTATION === "podman") {
    // Podman takes the profile as a path on its host (a private file, gone after create)
    // and reports the capabilities it kept, not the ones dropped.
    assert.ok(hc.SecurityOpt.includes("no-new-privileges"), hc.SecurityOpt.join(" | "));
    assert.ok(hc.SecurityOpt.some((o) => /^seccomp=\/.*\/anvia-seccomp-[^/]*\.json$/.test(o)), hc.SecurityOpt.join(" | "));
    assert.deepEqual(hc.CapAdd ?? [], []);
    assert.ok(!hc.CapDrop.includes("CHOWN"), hc.CapDrop.join(" "));
  } else {
    assert.ok(hc.SecurityOpt.includes("no-new-privileges:true"));
    assert.ok(hc.SecurityOpt.includes('seccomp={"defaultAction":"SCMP_ACT_ALLOW","syscalls":[]}'), hc.SecurityOpt.join(" | "));
    assert.deepEqual(hc.CapDrop, ["ALL"]);
    assert.deepEqual(hc.CapAdd, ["CHOWN"]);
  }
  // The state itself, from inside the container, the same on every engine: the bounding
  // set is CHOWN alone, no new privileges, a seccomp filter, the limits in the cgroup
  // files, /dev/shm's size, a read-only root and the workspace mounted at /work/dir.
  const state = await dockerExec(`anvia-sandbox-${id}`, ["sh", "-c",
    "grep -E '^(CapBnd|NoNewPrivs|Seccomp):' /proc/self/status; " +
    "cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null || " +
    "cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/pids.max /sys/fs/cgroup/cpu.max; " +
    "df -k /dev/shm | tail -1 | awk '{print \"shm \" $2}'; " +
    "touch /rootfs-probe 2>/dev/null && echo root-writable || echo root-readonly; " +
    "awk '$5 == \"/work/dir\" { print \"mounted\" }' /proc/self/mountinfo"]);
  assert.equal(state.exitCode, 0, state.stderr);
  assert.match(state.stdout, /^CapBnd:\s+0000000000000001$/m);
  assert.match(state.stdout, /^NoNewPrivs:\s+1$/m);
  assert.match(state.stdout, /^Seccomp:\s+2$/m);
  assert.match(state.stdout, /^268435456$/m);
  assert.match(state.stdout, /^128$/m);
  assert.match(state.stdout, /^(150000|150000 100000)$/m);
  assert.match(state.stdout, /^shm 32768$/m);
  assert.match(state.stdout, /^root-readonly$/m);
  assert.match(state.stdout, /^mounted$/m);
  // Ports: bound to 127.0.0.1 only, on the host port the engine chose.
  const published = sandbox.runtime.publishedPorts;
  assert.deepEqual(published.map((p) => p.containerPort), [8080, 9090]);
  for (const p of published) {
    const bound = info.NetworkSettings.Ports[`${p.containerPort}/tcp`];
    assert.deepEqual(bound.map((b) => b.HostIp), ["127.0.0.1"]);
    assert.equal(Number(bound[0].HostPort), p.hostPort);
    assert.equal(p.host, "127.0.0.1");
    assert.equal(p.protocol, "tcp");
  }
  assert.ok(Object.isFrozen(published) && Object.isFrozen(published[0]));
  // The initial content arrived, owned by the sandbox user, who can write to the
  // workspace even with a read-only root filesystem.
  const ls = await dockerExec(`anvia-sandbox-${id}`, ["sh", "-c", "busybox stat -c '%u:%g %a %n' /work/dir /work/dir/readme.md /work/dir/bin /work/dir/bin/tool /work/dir/empty/nested; od -An -tu1 /work/dir/bin/tool; echo ok > /work/dir/new && echo WROTE"]);
  assert.equal(ls.exitCode, 0, ls.stderr);
  assert.match(ls.stdout, /1000:1000 755 \/work\/dir\n1000:1000 644 \/work\/dir\/readme.md\n1000:1000 755 \/work\/dir\/bin\n1000:1000 644 \/work\/dir\/bin\/tool\n1000:1000 755 \/work\/dir\/empty\/nested\n/);
  assert.match(ls.stdout, /0\s+1\s+2\s+255/);
  assert.match(ls.stdout, /WROTE/);
});

test("a named user resolves through the image's /etc/passwd and owns the workspace", async (t) => {
  const sandbox = await client.createSandbox(baseOptions({ user: "nobody", files: { "a/b.txt": "x" } }));
  t.after(() => sandbox.destroy());
  const out = await dockerExec(`anvia-sandbox-${sandbox.id}`, ["sh", "-c", "busybox stat -c '%U:%G' /workspace /workspace/a /workspace/a/b.txt; echo more >> /workspace/a/b.txt && echo APPENDED"]);
  assert.equal(out.stdout, "nobody:nogroup\nnobody:nogroup\nnobody:nogroup\nAPPENDED\n");
});

test("a late failure rolls back the container and the volume", async () => {
  const id = uniqueId("late");
  // The container is created before the user is looked up in the image: unknown user.
  await assert.rejects(client.createSandbox(baseOptions({ id, user: "no-such-user", files: { f: "x" } })), (error) => {
    assert.ok(error instanceof DockerSandboxError, String(error));
    assert.match(error.message, /no-such-user/);
    return true;
  });
  await assertNothingLeft(id);
  const id2 = uniqueId("badcap");
  await assert.rejects(
    client.createSandbox(baseOptions({ id: id2, security: { addCapabilities: ["NOT_A_CAPABILITY"] } })),
    (error) => error.code === "docker_command_failed" && error.details?.statusCode >= 400,
  );
  await assertNothingLeft(id2);
});

test("checks before creation: existing container, missing image, missing named volume", async (t) => {
  const sandbox = await client.createSandbox(baseOptions());
  t.after(() => sandbox.destroy());
  await assert.rejects(client.createSandbox(baseOptions({ id: sandbox.id })), {
    name: "DockerSandboxError",
    code: "invalid_state",
    message: `A Docker container already exists for sandbox: anvia-sandbox-${sandbox.id}`,
  });
  const id = uniqueId("noimg");
  await assert.rejects(client.createSandbox(baseOptions({ id, image: "anvia-sandbox/does-not-exist:never" })), {
    code: "image_not_found",
    message: "Docker image is not available locally: anvia-sandbox/does-not-exist:never",
  });
  const vol = uniqueId("novol");
  await assert.rejects(client.createSandbox(baseOptions({ id, workspace: { type: "docker-volume", name: vol } })), {
    code: "volume_not_found",
    message: `Docker volume does not exist: ${vol}`,
  });
  await assertNothingLeft(id);
});

test("stop then resume keeps the workspace; destroy removes container and owned volume", async () => {
  const sandbox = await client.createSandbox(baseOptions({ network: { mode: "bridge", ports: [7000] }, files: { "keep.txt": "kept" } }));
  const volume = (await inspectContainer(`anvia-sandbox-${sandbox.id}`)).Config.Labels["anvia.sandbox.workspace.volume"];
  await sandbox.stop();
  assert.equal(sandbox.state, "stopped");
  await sandbox.stop(); // stopping a stopped sandbox is a no-op
  assert.equal((await inspectContainer(`anvia-sandbox-${sandbox.id}`)).State.Running, false);
  await assert.rejects(sandbox.runtime.exec?.({ command: "true" }) ?? Promise.reject({ code: "invalid_state" }), { code: "invalid_state" });
  const resumed = await client.resumeSandbox({ id: sandbox.id });
  assert.equal(resumed.state, "running");
  assert.equal(resumed.runtime.workdir, "/workspace");
  assert.deepEqual(resumed.runtime.publishedPorts.map((p) => p.containerPort), [7000]);
  assert.ok(resumed.runtime.publishedPorts[0].hostPort > 0);
  const cat = await dockerExec(`anvia-sandbox-${sandbox.id}`, ["cat", "/workspace/keep.txt"]);
  assert.equal(cat.stdout, "kept");
  // Resuming a running sandbox restarts it.
  const again = await client.resumeSandbox({ id: sandbox.id });
  assert.equal(again.state, "running");
  await again.destroy();
  assert.equal(again.state, "destroyed");
  await again.destroy(); // idempotent
  assert.equal(await inspectContainer(`anvia-sandbox-${sandbox.id}`), undefined);
  assert.equal(await volumeExists(volume), false);
  await assertNothingLeft(sandbox.id);
  await assert.rejects(resumed.stop(), { code: "invalid_state" }).catch(() => undefined);
});

test("resume errors: missing sandbox, foreign container, paused container", async (t) => {
  await assert.rejects(client.resumeSandbox({ id: "anvia-missing-xyz" }), {
    code: "sandbox_not_found",
    message: "Sandbox does not exist: anvia-sandbox-anvia-missing-xyz",
  });
  const foreign = uniqueId("foreign");
  const created = await api("POST", `/containers/create?name=anvia-sandbox-${foreign}`, { Image: IMAGE, Cmd: ["true"] });
  assert.equal(created.status, 201);
  t.after(() => api("DELETE", `/containers/anvia-sandbox-${foreign}?force=1`));
  await assert.rejects(client.resumeSandbox({ id: foreign }), {
    code: "sandbox_not_found",
    message: `Container is not an Anvia sandbox: anvia-sandbox-${foreign}`,
  });
  const sandbox = await client.createSandbox(baseOptions());
  t.after(() => sandbox.destroy());
  assert.equal((await api("POST", `/containers/anvia-sandbox-${sandbox.id}/pause`)).status, 204);
  await assert.rejects(client.resumeSandbox({ id: sandbox.id }), {
    code: "invalid_state",
    message: "Sandbox cannot be resumed from Docker state: paused",
  });
  await api("POST", `/containers/anvia-sandbox-${sandbox.id}/unpause`);
});

test("destroy never removes a caller's docker-volume", async (t) => {
  const name = uniqueId("callervol");
  assert.equal((await api("POST", "/volumes/create", { Name: name })).status, 201);
  let next;
  // One hook, in order: the volume can only go once no container uses it. (Two hooks ran
  // the volume's DELETE first, which the engine refused, and every run left the volume.)
  t.after(async () => {
    await next?.destroy();
    assert.equal((await api("DELETE", `/volumes/${name}`)).status, 204, `the test's volume ${name} was not removed`);
  });
  const sandbox = await client.createSandbox(baseOptions({ workspace: { type: "docker-volume", name }, files: { "x.txt": "1" } }));
  await sandbox.destroy();
  assert.equal(await volumeExists(name), true);
  assert.equal(await inspectContainer(`anvia-sandbox-${sandbox.id}`), undefined);
  // The data stays in the caller's volume: a new sandbox on it sees the file.
  next = await client.createSandbox(baseOptions({ workspace: { type: "docker-volume", name } }));
  assert.equal((await dockerExec(`anvia-sandbox-${next.id}`, ["cat", "/workspace/x.txt"])).stdout, "1");
});

test("a container made with the original's exact docker run arguments resumes", async (t) => {
  const id = uniqueId("seed");
  const name = `anvia-sandbox-${id}`;
  const volume = `${name}-workspace-00000000-0000-4000-8000-000000000000`;
  const docker = (...args) => execFileSync("docker", args, { encoding: "utf8" });
  docker("volume", "create", "--label", `anvia.sandbox.id=${id}`, volume);
  t.after(() => {
    try {
      docker("rm", "-f", name);
    } catch {}
    try {
      docker("volume", "rm", volume);
    } catch {}
  });
  // createRunArgs of @anvia/sandbox 1.0.0-rc.10 for these options.
  docker(
    "run", "-d", "--name", name,
    "--mount", `type=volume,src=${volume},dst=/workspace`,
    "-w", "/workspace",
    "--label", "anvia.sandbox.schema=1",
    "--label", `anvia.sandbox.id=${id}`,
    "--label", "anvia.sandbox.workdir=/workspace",
    "--label", "anvia.sandbox.workspace.type=ephemeral",
    "--label", `anvia.sandbox.workspace.volume=${volume}`,
    "--label", "anvia.sandbox.network.mode=bridge",
    "--label", "anvia.sandbox.runtime.command-timeout-ms=30000",
    "--label", "anvia.sandbox.runtime.max-output-bytes=1048576",
    "--label", "anvia.sandbox.runtime.max-file-bytes=10485760",
    "--label", "anvia.sandbox.runtime.max-processes=4",
    "--env", "FROM_SEED=1",
    "--publish", "127.0.0.1::3000/tcp",
    "--security-opt", "no-new-privileges:true",
    "--cap-drop", "ALL",
    IMAGE, "sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done",
  );
  docker("exec", name, "sh", "-c", "echo from-seed > /workspace/seed.txt");
  const sandbox = await client.resumeSandbox({ id });
  assert.equal(sandbox.runtime.workdir, "/workspace");
  assert.deepEqual(sandbox.runtime.publishedPorts.map((p) => [p.containerPort, p.host]), [[3000, "127.0.0.1"]]);
  // No runtime label (rc.10 made it): the runtime the engine reports, as upstream reads it.
  const engineRuntime = (await inspectContainer(name)).HostConfig.Runtime;
  assert.equal(sandbox.inspector({ files: true }).containerRuntime, engineRuntime || "default");
  assert.equal((await dockerExec(name, ["cat", "/workspace/seed.txt"])).stdout, "from-seed\n");
  await sandbox.destroy();
  await assertNothingLeft(id);
});

test("abort during createSandbox leaves nothing behind, whenever it lands", async () => {
  for (const delay of [0, 2, 5, 10, 20, 40, 80, 150, 300, 600]) {
    const id = uniqueId(`abort${delay}`);
    const controller = new AbortController();
    const reason = new Error(`aborted after ${delay} ms`);
    const timer = setTimeout(() => controller.abort(reason), delay);
    try {
      const sandbox = await client.createSandbox(baseOptions({ id, files: { a: "1" }, abortSignal: controller.signal }));
      // Finished before the abort: fine, clean it up.
      await sandbox.destroy();
    } catch (error) {
      assert.equal(error, reason, `${delay} ms: ${error?.stack ?? error} ${error?.errors?.map((e) => e.message)}`);
    } finally {
      clearTimeout(timer);
    }
    await assertNothingLeft(id);
  }
});
