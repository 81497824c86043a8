// Other OCI runtimes (upstream 1.1.2's containerRuntime), on the real engine: gVisor (runsc,
// registered by scripts/dockerd.sh with --network=none) and crun. For each: the sandbox
// really runs under it, every runtime operation works (exec, execStream, files, listing,
// managed processes, a port inside, tree transfers), stop and resume keep its files and its
// runtime, a fork runs under its parent's runtime, and destroy removes it. npm test runs this
// file through the agent and through the engine path (ANVIA_SANDBOX_TRANSPORT=engine), and
// its runsc stage runs the other integration suites under runsc too.
// Needs the runtimes registered in the daemon: a missing one fails here with what to do.
import test, { after, describe } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { DockerSandboxClient, DockerSandboxError } from "../../lib/index.js";
import { IMAGE, api, inspectContainer, labelledLeftovers } from "../helpers/docker.js";
import { isPodman } from "../helpers/engines.js";

const client = new DockerSandboxClient();
const text = (bytes) => new TextDecoder().decode(bytes);
const work = mkdtempSync(path.join(tmpdir(), "anvia-runtimes-"));
after(() => rmSync(work, { recursive: true, force: true }));
const T = { timeout: 180_000 };

const registered = Object.keys((await api("GET", "/info")).json?.Runtimes ?? {});

// The runtime the engine runs a container with. Podman's compatible inspect always says
// "oci" in HostConfig.Runtime; its own (libpod) inspect names the runtime.
async function engineRuntime(name) {
  const info = await inspectContainer(name);
  if (!isPodman) return info.HostConfig.Runtime;
  assert.equal(info.HostConfig.Runtime, "oci");
  const own = await api("GET", `/libpod/containers/${encodeURIComponent(name)}/json`);
  assert.equal(own.status, 200, own.text);
  return own.json.OCIRuntime;
}

for (const runtime of ["runsc", "crun"]) {
  describe(`containerRuntime ${runtime}`, () => {
    test("registered in the daemon (scripts/dockerd.sh registers it when installed)", () => {
      assert.ok(
        registered.includes(runtime),
        `the daemon has no ${runtime} runtime (it has ${registered.join(", ")}): apt-get install ${runtime}, then restart the dockerd of scripts/dockerd.sh`,
      );
    });

    // Podman's Docker-compatible create does not apply HostConfig.Runtime (4.3.1 runs the
    // container under its default runtime): the package refuses rather than run a sandbox
    // under a weaker runtime than asked, before anything is made.
    test("on Podman: refused with runtime_not_found, nothing made", { ...T, skip: !isPodman && "Podman only" }, async () => {
      const id = `rt-podman-${runtime}-${process.pid}`;
      await assert.rejects(client.createSandbox({ image: IMAGE, id, workspace: { type: "ephemeral" }, network: { mode: "none" }, containerRuntime: runtime }), (error) => {
        assert.ok(error instanceof DockerSandboxError, String(error));
        assert.equal(error.code, "runtime_not_found");
        assert.match(error.message, new RegExp(`^Podman at .* does not apply containerRuntime through its Docker-compatible API \\(the container would run under Podman's default runtime, not ${runtime}\\)`));
        return true;
      });
      assert.equal((await api("GET", `/containers/anvia-sandbox-${id}/json`)).status, 404);
    });

    test("every runtime operation, stop and resume, fork, destroy", { ...T, skip: isPodman && "Podman does not apply containerRuntime (the test above)" }, async (t) => {
      const sandbox = await client.createSandbox({
        image: IMAGE,
        workspace: { type: "ephemeral" },
        network: { mode: "none" },
        containerRuntime: runtime,
        files: { "hello.txt": `under ${runtime}\n` },
      });
      t.after(() => sandbox.destroy().catch(() => {}));
      const rt = sandbox.runtime;
      const name = `anvia-sandbox-${sandbox.id}`;
      assert.equal(sandbox.inspector({ files: true }).containerRuntime, runtime);
      const info = await inspectContainer(name);
      assert.equal(await engineRuntime(name), runtime);
      assert.equal(info.Config.Labels["anvia.sandbox.container-runtime"], runtime);
      if (runtime === "runsc") {
        // gVisor's own kernel says so.
        const dmesg = await rt.exec({ command: "dmesg" });
        assert.match(text(dmesg.stdout), /Starting gVisor/);
      }

      // exec, buffered and streamed, with input, a timeout and an exit code.
      const r = await rt.exec({ command: "sh", args: ["-c", "cat hello.txt; read x; echo got $x; exit 3"], input: "input\n" });
      assert.deepEqual([text(r.stdout), r.exitCode], [`under ${runtime}\ngot input\n`, 3]);
      const slow = await rt.exec({ command: "sleep", args: ["30"], timeoutMs: 500 });
      assert.equal(slow.status, "timed_out");
      let streamed = "";
      for await (const ev of rt.execStream({ command: "sh", args: ["-c", "for i in 1 2 3; do echo $i; done"] })) {
        if (ev.type === "stdout") streamed += text(ev.data);
      }
      assert.equal(streamed, "1\n2\n3\n");

      // Files and listing.
      await rt.writeTextFile({ path: "dir/a.txt", text: "alpha" });
      await rt.writeFile({ path: "dir/b.bin", data: new Uint8Array([0, 1, 2, 255]) });
      assert.equal(await rt.readTextFile({ path: "dir/a.txt" }), "alpha");
      assert.deepEqual([...(await rt.readFile({ path: "dir/b.bin" }))], [0, 1, 2, 255]);
      const listing = await rt.listFiles({ path: "dir" });
      assert.deepEqual(listing.map((e) => [e.path, e.type]).sort(), [["dir/a.txt", "file"], ["dir/b.bin", "file"]]);
      const page = await rt.readTextFilePage({ path: "hello.txt", startLine: 1, lineCount: 1 });
      assert.equal(page.content, `under ${runtime}\n`);

      // A managed process listening on a port inside the sandbox, its logs, its stop.
      const server = await rt.startProcess({ command: "busybox", args: ["httpd", "-f", "-p", "127.0.0.1:8080", "-h", "."] });
      const worker = await rt.startProcess({ command: "sh", args: ["-c", "echo started; sleep 600"] });
      await rt.waitForPort({ port: 8080, timeoutMs: 60_000 }).then(
        () => {},
        (e) => {
          // A sandbox without published ports has nothing to hand back: the wait refuses
          // (the port is not published) without waiting, and never as a timeout.
          assert.ok(e instanceof DockerSandboxError, String(e));
          assert.notEqual(e.code, "timeout", e.message);
        },
      );
      // Without a published port, waitForPort refuses before it waits (the port is not
      // published), so the server may not be listening yet: ask until it answers.
      const fetch = () => rt.exec({ command: "busybox", args: ["wget", "-q", "-O", "-", "http://127.0.0.1:8080/hello.txt"] });
      let fetched = await fetch();
      for (let tries = 0; fetched.exitCode !== 0 && tries < 600; tries++) {
        await sleep(100);
        fetched = await fetch();
      }
      assert.equal(fetched.exitCode, 0, text(fetched.stderr));
      assert.equal(text(fetched.stdout), `under ${runtime}\n`);
      while (!text((await rt.readProcessLogs({ processId: worker.id })).stdout).includes("started")) await sleep(100);
      assert.ok((await rt.listProcesses()).some((p) => p.id === server.id && p.status === "running"));
      const stopped = await rt.stopProcess({ processId: worker.id });
      assert.notEqual(stopped.status, "running");
      await rt.stopProcess({ processId: server.id });

      // Trees both ways.
      const src = path.join(work, `${runtime}-src`);
      mkdirSync(path.join(src, "sub"), { recursive: true });
      writeFileSync(path.join(src, "one.txt"), "1");
      writeFileSync(path.join(src, "sub", "two.txt"), "22");
      const imported = await rt.importTree(src, { path: "tree" });
      assert.equal(imported.files, 2);
      const out = path.join(work, `${runtime}-out`);
      await rt.exportTree({ kind: "subtree", path: "tree" }, out);
      assert.equal(readFileSync(path.join(out, "tree", "sub", "two.txt"), "utf8"), "22");

      // Stop and resume: files and runtime kept.
      await sandbox.stop();
      const resumed = await client.resumeSandbox({ id: sandbox.id });
      assert.equal(resumed.inspector({ files: true }).containerRuntime, runtime);
      assert.equal(await resumed.runtime.readTextFile({ path: "dir/a.txt" }), "alpha");
      assert.equal(await engineRuntime(name), runtime);

      // A fork runs under its parent's runtime.
      const fork = await resumed.fork();
      try {
        assert.equal(fork.inspector({ files: true }).containerRuntime, runtime);
        assert.equal(await engineRuntime(`anvia-sandbox-${fork.id}`), runtime);
        assert.equal(await fork.runtime.readTextFile({ path: "dir/a.txt" }), "alpha");
      } finally {
        await fork.destroy();
      }

      // Destroyed: gone, and resuming it says so.
      await resumed.destroy();
      assert.equal(resumed.state, "destroyed");
      await assert.rejects(client.resumeSandbox({ id: sandbox.id }), (e) => e.code === "sandbox_not_found");
    });
  });
}

test("a runtime the daemon does not have: runtime_not_found before anything is made", T, async () => {
  // A known id, so that what this create would have made is looked for by name: counting
  // every volume on the engine raced the test files running beside this one.
  const id = `no-runtime-${randomUUID().slice(0, 8)}`;
  await assert.rejects(
    client.createSandbox({ id, image: IMAGE, workspace: { type: "ephemeral" }, network: { mode: "none" }, containerRuntime: "no-such-runtime" }),
    (e) =>
      e instanceof DockerSandboxError &&
      e.code === "runtime_not_found" &&
      e.message ===
        'Docker runtime is not registered in the daemon: "no-such-runtime". Install the runtime (for gVisor: runsc install) and restart the Docker daemon.',
  );
  assert.equal((await api("GET", `/volumes/anvia-sandbox-${id}-workspace`)).status, 404, "a workspace volume was made");
  assert.equal((await api("GET", `/containers/anvia-sandbox-${id}/json`)).status, 404, "a container was made");
  assert.deepEqual(await labelledLeftovers(id), { containers: [], volumes: [] });
});
