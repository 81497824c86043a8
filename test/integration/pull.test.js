// pullImage against a real registry on loopback (Debian's docker-registry), since no
// public registry can be reached: the progress stream is read to the end, the image is
// there afterwards, and failures and aborts reject as they should.
import test from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DockerSandboxClient } from "../../lib/index.js";
import { IMAGE, api } from "../helpers/docker.js";

async function freePort() {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function startRegistry(t) {
  const dir = mkdtempSync(join(tmpdir(), "anvia-registry-"));
  const port = await freePort();
  writeFileSync(
    join(dir, "config.yml"),
    `version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: ${dir}/data\nhttp:\n  addr: 127.0.0.1:${port}\n`,
  );
  const child = spawn("docker-registry", ["serve", join(dir, "config.yml")], { stdio: "ignore" });
  t.after(() => {
    child.kill();
    rmSync(dir, { recursive: true, force: true });
  });
  for (let i = 0; i < 100; i++) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/v2/`);
      if (res.ok) return `127.0.0.1:${port}`;
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("docker-registry did not start");
}

const docker = (...args) => execFileSync("docker", args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

test("pullImage pulls from a registry, with and without a tag, and reports failures", async (t) => {
  const registry = await startRegistry(t);
  const ref = `${registry}/anvia/pull-test`;
  docker("tag", IMAGE, `${ref}:v1`);
  docker("tag", IMAGE, `${ref}:latest`);
  docker("push", `${ref}:v1`);
  docker("push", `${ref}:latest`);
  docker("rmi", `${ref}:v1`, `${ref}:latest`);
  t.after(() => {
    try {
      docker("rmi", `${ref}:v1`, `${ref}:latest`);
    } catch {}
  });
  const client = new DockerSandboxClient();
  assert.equal((await api("GET", `/images/${encodeURIComponent(`${ref}:v1`)}/json`)).status, 404);
  assert.equal(await client.pullImage({ image: `${ref}:v1` }), undefined);
  assert.equal((await api("GET", `/images/${encodeURIComponent(`${ref}:v1`)}/json`)).status, 200);
  // No tag means latest, never "every tag".
  await client.pullImage({ image: ref });
  assert.equal((await api("GET", `/images/${encodeURIComponent(`${ref}:latest`)}/json`)).status, 200);
  // Pulled images can be used at once.
  const sandbox = await client.createSandbox({ image: `${ref}:v1`, workspace: { type: "ephemeral" }, network: { mode: "none" } });
  await sandbox.destroy();
  // A tag the registry does not have.
  await assert.rejects(client.pullImage({ image: `${ref}:missing` }), (error) => {
    assert.equal(error.name, "DockerSandboxError");
    assert.equal(error.code, "docker_command_failed");
    assert.match(error.message, /manifest unknown|not found/i);
    return true;
  });
  // Aborting mid-pull rejects with the reason.
  docker("rmi", `${ref}:v1`);
  const controller = new AbortController();
  const reason = new Error("pull aborted");
  const pending = client.pullImage({ image: `${ref}:v1`, abortSignal: controller.signal });
  setTimeout(() => controller.abort(reason), 1);
  await assert.rejects(pending, (error) => error === reason);
});
