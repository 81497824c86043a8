// ssh:// endpoints (issue 15), against the local sshd of scripts/sshd.sh (key login, our
// own known_hosts, the `ssh` wrapper first on PATH): what ssh says when it cannot reach
// the engine becomes docker_unavailable with ssh's own message; no ssh process outlives
// the client's environment (a worker thread that ends, a process that exits); and, when
// Podman runs beside it, a Podman reached over ssh gets the same treatment as a local one
// except what a remote Podman cannot do (a seccomp profile file of this host).
// Runs only with ANVIA_TEST_ENGINE=ssh (scripts/test-engine.sh ssh).
import test from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { setTimeout as sleep } from "node:timers/promises";
import { DockerSandboxClient } from "../../lib/index.js";
import { IMAGE, baseOptions } from "../helpers/docker.js";
import { DOCKER_HOST, isSsh } from "../helpers/engines.js";

const skip = isSsh ? false : "ssh:// tests run with ANVIA_TEST_ENGINE=ssh (scripts/test-engine.sh ssh)";
const url = isSsh ? new URL(DOCKER_HOST) : undefined;
const PORT = url?.port;
const SSH_CONFIG = process.env.ANVIA_SSH_CONFIG;
const text = (b) => Buffer.from(b).toString("utf8");

async function unavailable(host, pattern, env) {
  const client = new DockerSandboxClient({ host, transport: "engine" });
  const started = Date.now();
  await assert.rejects(client.resumeSandbox({ id: "no-such-sandbox" }), (error) => {
    assert.equal(error.code, "docker_unavailable", error.message);
    assert.match(error.message, pattern);
    assert.equal(error.details?.endpoint, host.replace(/\/$/, ""));
    return true;
  });
  return Date.now() - started;
}

// A directory with an `ssh` that records its pid, then runs the real one with our config.
function recordingSsh(t, extra = "") {
  const dir = mkdtempSync(join(tmpdir(), "anvia-ssh-bin-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const pids = join(dir, "pids");
  writeFileSync(join(dir, "ssh"), `#!/bin/sh\necho $$ >> ${pids}\n${extra}exec /usr/bin/ssh -F ${SSH_CONFIG} "$@"\n`);
  chmodSync(join(dir, "ssh"), 0o755);
  return { dir, pids: () => (existsSync(pids) ? readFileSync(pids, "utf8").trim().split("\n").filter(Boolean).map(Number) : []) };
}

const alive = (pid) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !/^\d+ \(.*\) Z /.test(stat); // a zombie is gone for our purpose only once reaped
  } catch {
    return false;
  }
};

test("ssh failures are docker_unavailable with ssh's own message", { skip }, async (t) => {
  // Nothing listens there.
  await unavailable("ssh://root@127.0.0.1:1", /^Docker engine is not reachable at ssh:\/\/root@127\.0\.0\.1:1: ssh: connect to host 127\.0\.0\.1 port 1: Connection refused$/);
  // The server refuses the login (only root may log in on the test sshd).
  await unavailable(`ssh://nobody@127.0.0.1:${PORT}`, /: nobody@127\.0\.0\.1: Permission denied \(publickey\)\.$/);
  // Logged in, but no engine behind the remote socket.
  await unavailable(`ssh://root@127.0.0.1:${PORT}/run/no-such-engine.sock`, /dial unix \/run\/no-such-engine\.sock: connect: no such file or directory/);
  // Logged in, but no docker CLI on the remote side (the wrapper asks for another name).
  const { dir } = recordingSsh(t, 'set -- $(echo "$@" | sed "s/ docker / docker-is-not-installed /")\n');
  const oldPath = process.env.PATH;
  process.env.PATH = `${dir}:${oldPath}`;
  try {
    await unavailable(`ssh://root@127.0.0.1:${PORT}`, /docker-is-not-installed: (command )?not found/);
  } finally {
    process.env.PATH = oldPath;
  }
  // No ssh client at all.
  process.env.PATH = "/nonexistent";
  try {
    await unavailable(`ssh://root@127.0.0.1:${PORT}`, /no `ssh` client was found on PATH/);
  } finally {
    process.env.PATH = oldPath;
  }
});

test("an unknown host key is refused, never accepted on the way (no prompt, BatchMode)", { skip }, async (t) => {
  // The system's ssh without our known_hosts: the key of the test sshd is unknown.
  const dir = mkdtempSync(join(tmpdir(), "anvia-ssh-bin-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const cfg = join(dir, "config");
  writeFileSync(cfg, readFileSync(SSH_CONFIG, "utf8").replace(/UserKnownHostsFile .*/, `UserKnownHostsFile ${dir}/known_hosts`).replace(/StrictHostKeyChecking .*/, "StrictHostKeyChecking ask").replace(/BatchMode .*/, ""));
  writeFileSync(join(dir, "ssh"), `#!/bin/sh\nexec /usr/bin/ssh -F ${cfg} "$@"\n`);
  chmodSync(join(dir, "ssh"), 0o755);
  const oldPath = process.env.PATH;
  process.env.PATH = `${dir}:${oldPath}`;
  try {
    await unavailable(`ssh://root@127.0.0.1:${PORT}`, /Host key verification failed\./);
  } finally {
    process.env.PATH = oldPath;
  }
  assert.ok(!existsSync(join(dir, "known_hosts")) || readFileSync(join(dir, "known_hosts"), "utf8") === "");
});

test("no ssh process and no listener directory outlives a worker thread that used the client, nor a process that exits", { skip, timeout: 120_000 }, async (t) => {
  const { dir, pids } = recordingSsh(t);
  // The temporary directory the clients make their private listener directory in
  // (anvia-ssh-*): empty again once each user of a client has ended.
  const scratch = mkdtempSync(join(tmpdir(), "anvia-ssh-tmp-"));
  t.after(() => rmSync(scratch, { recursive: true, force: true }));
  const leftIn = () => readdirSync(scratch);
  const script = `
    import { DockerSandboxClient } from ${JSON.stringify(new URL("../../lib/index.js", import.meta.url).href)};
    const client = new DockerSandboxClient({ transport: "engine" });
    const sb = await client.createSandbox(${JSON.stringify(baseOptions())});
    const r = await sb.runtime.exec({ command: "cat", input: "through ssh" });
    await sb.runtime.writeTextFile({ path: "f.txt", text: "x" });
    await sb.destroy();
    process.stdout.write(Buffer.from(r.stdout).toString() + "\\n");
    if (process.argv[2] === "exit") process.exit(0);
  `;
  const file = join(dir, "use-client.mjs");
  writeFileSync(file, script);
  const oldPath = process.env.PATH;
  const oldTmp = process.env.TMPDIR;
  process.env.PATH = `${dir}:${oldPath}`;
  process.env.TMPDIR = scratch; // read by the addon in this process, for the worker's client
  try {
    // A worker thread: its environment is torn down when it ends.
    const worker = new Worker(new URL(`file://${file}`), { stdout: true });
    let out = "";
    worker.stdout.on("data", (c) => (out += c));
    await new Promise((resolve, reject) => {
      worker.on("error", reject);
      worker.on("exit", resolve);
    });
    assert.equal(out.trim(), "through ssh");
    const used = pids();
    assert.ok(used.length >= 2, `ssh processes started by the worker: ${used}`);
    await sleep(200);
    assert.deepEqual(used.filter(alive), [], "ssh processes left after the worker ended");
    assert.deepEqual(leftIn(), [], "listener directories left after the worker ended");
    // A process that exits when its work is done, and one that calls process.exit().
    for (const how of ["end", "exit"]) {
      const before = pids().length;
      const child = spawn(process.execPath, [file, how], { stdio: ["ignore", "pipe", "inherit"], env: { ...process.env } });
      let childOut = "";
      child.stdout.on("data", (c) => (childOut += c));
      const code = await new Promise((resolve) => child.on("exit", resolve));
      assert.equal(code, 0);
      assert.equal(childOut.trim(), "through ssh");
      const mine = pids().slice(before);
      assert.ok(mine.length >= 2);
      await sleep(500);
      assert.deepEqual(mine.filter(alive), [], `ssh processes left after the process exited (${how})`);
      assert.deepEqual(leftIn(), [], `listener directories left after the process exited (${how})`);
    }
  } finally {
    process.env.PATH = oldPath;
    if (oldTmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = oldTmp;
  }
});

test("execs over ssh: every exec its own connection, spares kept ahead, output and input intact", { skip, timeout: 120_000 }, async (t) => {
  const { dir, pids } = recordingSsh(t);
  const oldPath = process.env.PATH;
  process.env.PATH = `${dir}:${oldPath}`;
  t.after(() => (process.env.PATH = oldPath));
  const client = new DockerSandboxClient({ transport: "engine" });
  const sb = await client.createSandbox(baseOptions());
  t.after(() => sb.destroy());
  const input = randomBytes(2 * 1024 * 1024);
  const counts = [];
  for (let i = 0; i < 6; i++) {
    const r = await sb.runtime.exec({ command: "sh", args: ["-c", "wc -c; echo $0"], input });
    assert.equal(text(r.stdout), `${input.length}\nsh\n`);
    counts.push(pids().length);
  }
  // 16 at once.
  const many = await Promise.all(Array.from({ length: 16 }, (_, i) => sb.runtime.exec({ command: "echo", args: [`n${i}`] })));
  assert.deepEqual(many.map((r) => text(r.stdout)), Array.from({ length: 16 }, (_, i) => `n${i}\n`));
  t.diagnostic(`ssh processes started after each of 6 execs: ${counts.join(", ")}; after 16 more at once: ${pids().length}`);
});

const podmanSocket = process.env.ANVIA_TEST_PODMAN_SOCKET;
test("Podman over ssh: input without loss; a seccomp profile of this host is refused, naming why", { skip: skip || (!podmanSocket && "no Podman beside (ANVIA_TEST_PODMAN_SOCKET)"), timeout: 300_000 }, async (t) => {
  const host = `ssh://root@127.0.0.1:${PORT}${podmanSocket}`;
  const client = new DockerSandboxClient({ host, transport: "engine" });
  const sb = await client.createSandbox(baseOptions());
  t.after(() => sb.destroy());
  for (let i = 0; i < 40; i++) {
    const r = await sb.runtime.exec({ command: "sh", args: ["-c", `echo out ${i}; exit 3`], input: randomBytes(i % 2 ? 65536 : 1) });
    assert.deepEqual([text(r.stdout), r.exitCode], [`out ${i}\n`, 3]);
  }
  const dir = mkdtempSync(join(tmpdir(), "anvia-seccomp-remote-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const profile = join(dir, "p.json");
  writeFileSync(profile, '{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[]}');
  await assert.rejects(client.createSandbox(baseOptions({ security: { seccompProfile: { type: "path", path: profile } } })), (error) => {
    assert.equal(error.code, "docker_command_failed");
    assert.match(error.message, /^Podman at ssh:\/\/.* reads a seccomp profile as a path on its own host and cannot take one inline/);
    return true;
  });
});

test("the image the suites use is there through ssh", { skip }, async () => {
  // The same engine answers through ssh as on its socket: the image check goes through ssh.
  const out = execFileSync("ssh", ["-p", PORT, `root@127.0.0.1`, "docker", "image", "inspect", "--format", "{{.Id}}", IMAGE], { encoding: "utf8" });
  assert.match(out, /^sha256:/);
});
