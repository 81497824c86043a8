// What differs per engine is decided by the library, the same way on every engine
// (issue 15): exec input reaches the command and never costs output, a seccomp profile is
// applied in the form the engine takes, and a write onto a directory is refused with the
// library's own message. Runs against whatever ANVIA_TEST_ENGINE / DOCKER_HOST name
// (scripts/test-engine.sh): Docker, Podman, or Docker over ssh.
//
// The execs here go through the engine's exec endpoints (transport "engine"), which is
// where the engines differ; the in-sandbox agent reads its input itself.
import test, { after, before } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DockerSandboxClient } from "../../lib/index.js";
import { baseOptions, dockerExec, inspectContainer } from "../helpers/docker.js";
import { ENGINE, IMPLEMENTATION } from "../helpers/engines.js";

const client = new DockerSandboxClient({ transport: "engine" });
const text = (bytes) => Buffer.from(bytes).toString("utf8");
const MiB = 1024 * 1024;

let sandbox;
let reader; // a non-root user on a read-only root filesystem
before(async () => {
  [sandbox, reader] = await Promise.all([
    client.createSandbox(baseOptions()),
    client.createSandbox(baseOptions({ user: "65534:65534", security: { readonlyRootfs: true } })),
  ]);
});
after(async () => {
  await Promise.allSettled([sandbox?.destroy(), reader?.destroy()]);
});

test(`${ENGINE}: input the command reads, reads in part, or never reads: output and exit code intact`, async () => {
  for (const sb of [sandbox, reader]) {
    const who = sb === sandbox ? "root" : "65534 on a read-only root";
    for (const size of [0, 1, 64 * 1024, 1 * MiB, 8 * MiB]) {
      const input = randomBytes(size);
      const all = await sb.runtime.exec({ command: "wc", args: ["-c"], input, timeoutMs: 60_000 });
      assert.equal(all.exitCode, 0, `${who} ${size}: ${text(all.stderr)}`);
      assert.equal(text(all.stdout).trim(), String(size), `${who} ${size}`);
      const part = await sb.runtime.exec({ command: "sh", args: ["-c", "head -c 10 | wc -c; echo done; exit 4"], input, timeoutMs: 60_000 });
      assert.deepEqual([text(part.stdout), part.exitCode, text(part.stderr)], [`${Math.min(size, 10)}\ndone\n`, 4, ""], `${who} ${size}`);
      const none = await sb.runtime.exec({ command: "sh", args: ["-c", "echo out; echo err >&2; exit 3"], input, timeoutMs: 60_000 });
      assert.deepEqual([text(none.stdout), text(none.stderr), none.exitCode], ["out\n", "err\n", 3], `${who} ${size}`);
    }
  }
  // Nothing was staged or left behind in the container (no temporary file anywhere).
  const left = await dockerExec(`anvia-sandbox-${sandbox.id}`, ["sh", "-c", "find / -xdev -newer /etc/hostname -name '*anvia*' 2>/dev/null | grep -v '^/proc' | head"]);
  assert.equal(left.stdout, "");
});

test(`${ENGINE}: an empty input is an end of file from the start, never a stdin the engine must close`, async () => {
  // Docker 20.10 can lose the close of a stdin that ends while the exec is being created
  // (containerd's CloseIO race): the library does not attach one (README, "What differs per engine").
  for (const input of ["", new Uint8Array(0)]) {
    const r = await sandbox.runtime.exec({ command: "sh", args: ["-c", "readlink /proc/self/fd/0; wc -c"], input, timeoutMs: 60_000 });
    assert.deepEqual([text(r.stdout), r.exitCode], ["/dev/null\n0\n", 0]);
  }
});

test(`${ENGINE}: with input, a missing command is 126/127 and a signal is 128+n, as without`, async () => {
  for (const input of [undefined, "x"]) {
    const missing = await sandbox.runtime.exec({ command: "no-such-command-h15", input });
    assert.ok(missing.exitCode === 126 || missing.exitCode === 127, `input ${input}: ${missing.exitCode}`);
    const killed = await sandbox.runtime.exec({ command: "sh", args: ["-c", "kill -TERM $$"], input });
    assert.equal(killed.exitCode, 143, `input ${input}`);
  }
  // Arguments are passed as they are, never through a shell.
  const args = ["a b", "$HOME", "'q'", "`x`", "*", ""];
  const echoed = await sandbox.runtime.exec({ command: "printf", args: ["[%s]", ...args], input: "ignored" });
  assert.equal(text(echoed.stdout), args.map((a) => `[${a}]`).join(""));
});

test(`${ENGINE}: a command with input that times out is ended with its whole tree`, async () => {
  const result = await sandbox.runtime.exec({ command: "sh", args: ["-c", "sleep 300 & sleep 300; echo never"], input: "abc", timeoutMs: 1500 });
  assert.equal(result.status, "timed_out");
  const ps = await dockerExec(`anvia-sandbox-${sandbox.id}`, ["sh", "-c", "ps -eo args | grep -c '^sleep 300' || true"]);
  assert.equal(ps.stdout.trim(), "0");
});

test(`${ENGINE}: a seccomp profile is applied (a denied syscall fails inside), whatever form the engine takes`, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "anvia-seccomp-engine-"));
  const staging = mkdtempSync(join(tmpdir(), "anvia-seccomp-tmp-"));
  const oldTmp = process.env.TMPDIR;
  t.after(() => {
    if (oldTmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = oldTmp;
    rmSync(dir, { recursive: true, force: true });
    rmSync(staging, { recursive: true, force: true });
  });
  const profile = join(dir, "deny-mkdir.json");
  writeFileSync(profile, JSON.stringify({
    defaultAction: "SCMP_ACT_ALLOW",
    syscalls: [{ names: ["mkdir", "mkdirat"], action: "SCMP_ACT_ERRNO", errnoRet: 1 }],
  }));
  // Where a Podman profile file is staged: a directory of this test's, empty again after.
  process.env.TMPDIR = staging;
  const sb = await client.createSandbox(baseOptions({ security: { seccompProfile: { type: "path", path: profile } } }));
  process.env.TMPDIR = oldTmp ?? "";
  if (oldTmp === undefined) delete process.env.TMPDIR;
  t.after(() => sb.destroy());
  const denied = await sb.runtime.exec({ command: "sh", args: ["-c", "mkdir /workspace/d 2>&1; echo $?; touch /workspace/f && echo touched"] });
  assert.match(text(denied.stdout), /Operation not permitted\n1\ntouched\n/);
  const info = await inspectContainer(`anvia-sandbox-${sb.id}`);
  const seccomp = info.HostConfig.SecurityOpt.find((o) => o.startsWith("seccomp="));
  if (IMPLEMENTATION === "podman") {
    assert.match(seccomp, new RegExp(`^seccomp=${staging}/anvia-seccomp-[^/]+\\.json$`));
    assert.deepEqual(readdirSync(staging), [], "the staged profile is removed once the create is answered");
    assert.ok(!existsSync(seccomp.slice("seccomp=".length)));
  } else {
    assert.ok(seccomp.startsWith('seccomp={"defaultAction":"SCMP_ACT_ALLOW"'), seccomp);
    assert.deepEqual(readdirSync(staging), []);
  }
});

test(`${ENGINE}: writing a file onto a directory is the library's error, root or not, on a writable or read-only root`, async () => {
  for (const sb of [sandbox, reader]) {
    await sb.runtime.exec({ command: "mkdir", args: ["-p", "ontodir/inner"] });
    await assert.rejects(sb.runtime.writeTextFile({ path: "ontodir", text: "x" }), (error) => {
      assert.equal(error.code, "docker_command_failed");
      assert.equal(error.message, "Sandbox path names a directory, not a file: ontodir");
      if (sb === sandbox) assert.equal(error.details?.path, "ontodir"); // the engine's refusal, read as what it means
      return true;
    });
    await assert.rejects(sb.runtime.writeTextFile({ path: "ontodir/inner", text: "x" }), /names a directory, not a file: ontodir\/inner/);
    const still = await sb.runtime.exec({ command: "sh", args: ["-c", "[ -d ontodir/inner ] && echo dir"] });
    assert.equal(text(still.stdout), "dir\n");
    // A trailing slash names a directory on every engine, for reads too.
    await sb.runtime.writeTextFile({ path: "f.txt", text: "file" });
    await assert.rejects(sb.runtime.readTextFile({ path: "f.txt/" }), /names a directory, not a file: f\.txt\//);
    await assert.rejects(sb.runtime.writeTextFile({ path: "f.txt/", text: "x" }), /names a directory, not a file: f\.txt\//);
  }
});
