// The in-sandbox agent on a real engine: where it is placed (writable rootfs, read-only
// rootfs with a non-root user, a busybox-only image), what happens when a command in the
// sandbox kills it in the middle of a call or of a stream (a typed error for the calls in
// flight, the next call works with a new agent, nothing of the killed command left
// running), an agent that lies (the engine path takes over in transport "auto"; a clear
// error in transport "agent"), and root in the sandbox replacing its agent (its own
// container only) where a non-root user cannot. The rest of the integration suites run through the agent
// too (the default transport is "auto"); CI runs them again with the engine path.
import test, { after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { DockerSandboxClient, DockerSandboxError } from "../../lib/index.js";
import { BUSYBOX_IMAGE, CONTAINER_RUNTIME, baseOptions, dockerExec, hostAgentBinary } from "../helpers/docker.js";
import { isPodman } from "../helpers/engines.js";

const client = new DockerSandboxClient({ transport: "agent" });
const sandboxes = [];
after(() => Promise.allSettled(sandboxes.map((s) => s.destroy())));
const text = (bytes) => new TextDecoder().decode(bytes);

async function make(extra = {}) {
  const sandbox = await client.createSandbox(baseOptions(extra));
  sandboxes.push(sandbox);
  return { sandbox, rt: sandbox.runtime, container: `anvia-sandbox-${sandbox.id}` };
}

// The processes of a container, as their command lines, seen from outside the library.
async function processes(container) {
  const out = await dockerExec(container, ["sh", "-c", 'for d in /proc/[0-9]*; do tr "\\000" " " < "$d/cmdline" 2>/dev/null; echo; done']);
  return out.stdout;
}

for (const [label, extra] of [
  ["writable rootfs, root", {}],
  ["read-only rootfs, user 1000:1000", { user: "1000:1000", security: { readonlyRootfs: true } }],
  ["busybox-only image, user 65534", { image: BUSYBOX_IMAGE, user: "65534:65534" }],
]) {
  test(`the agent is placed and serves every call: ${label}`, { timeout: 60_000 }, async () => {
    const { rt, container } = await make(extra);
    const r = await rt.exec({ command: "id", args: ["-u"] });
    assert.equal(r.exitCode, 0, text(r.stderr));
    const running = await processes(container);
    assert.match(running, /\/\.anvia\/agent-[0-9a-f]{16} --workdir \/workspace/, "the agent runs in the container");
    await rt.writeTextFile({ path: "d/e/f.txt", text: "agent" });
    assert.equal(await rt.readTextFile({ path: "d/e/f.txt" }), "agent");
    assert.deepEqual(await rt.listFiles({ path: "d/e" }), [{ path: "d/e/f.txt", type: "file", size: 5 }]);
    // Files belong to the sandbox's user, as on the engine path.
    const owner = await rt.exec({ command: "busybox", args: ["stat", "-c", "%u", "d/e/f.txt"] });
    assert.equal(text(owner.stdout).trim(), text(r.stdout).trim());
  });
}

test("a command kills the agent during a call: typed errors, then a new agent serves the next call, nothing left running", { timeout: 60_000 }, async () => {
  const { rt, container } = await make();
  await rt.exec({ command: "true" }); // the agent is up
  const victim = rt.exec({ command: "sh", args: ["-c", "echo started; sleep 3107"] });
  for (let i = 0; i < 100 && !/sleep 3107/.test(await processes(container)); i++) await sleep(20);
  // The killer's parent is the agent.
  const killer = rt.exec({ command: "sh", args: ["-c", "kill -9 $PPID; sleep 5"] });
  const [v, k] = await Promise.allSettled([victim, killer]);
  for (const [name, outcome] of [["victim", v], ["killer", k]]) {
    assert.equal(outcome.status, "rejected", `${name} ${JSON.stringify(outcome.value)}`);
    assert.ok(outcome.reason instanceof DockerSandboxError, `${name}: ${outcome.reason}`);
    assert.equal(outcome.reason.code, "docker_command_failed");
    assert.match(outcome.reason.message, /agent/);
  }
  const next = await rt.exec({ command: "echo", args: ["again"] });
  assert.equal(text(next.stdout), "again\n");
  let left = "";
  for (let i = 0; i < 100; i++) {
    left = await processes(container);
    if (!/sleep (3107|5)\b/.test(left)) break;
    await sleep(50);
  }
  assert.doesNotMatch(left, /sleep 3107/, "the killed agent's command still runs");
});

test("a command kills the agent during a stream: the stream fails with a typed error, the next stream works", { timeout: 60_000 }, async () => {
  const { rt, container } = await make();
  const events = [];
  let failure;
  try {
    for await (const event of rt.execStream({ command: "sh", args: ["-c", "i=0; while :; do echo line $i; i=$((i+1)); done"] })) {
      events.push(event);
      if (events.length === 50) await rt.exec({ command: "sh", args: ["-c", "kill -9 $PPID"] }).catch(() => {});
    }
  } catch (error) {
    failure = error;
  }
  assert.ok(failure instanceof DockerSandboxError, String(failure));
  assert.ok(events.length >= 50);
  const again = [];
  for await (const event of rt.execStream({ command: "sh", args: ["-c", "echo a; echo b"] })) again.push(event);
  assert.equal(again.at(-1).type, "result");
  assert.equal(again.filter((e) => e.type === "stdout").map((e) => text(e.data)).join(""), "a\nb\n");
  // The streaming command only: the container's first process may be a shell loop of its
  // own (the keep-alive loop, `while :; do sleep 3600 & wait $!; done`).
  const streaming = /while :; do echo line/;
  let left = "";
  for (let i = 0; i < 100; i++) {
    left = await processes(container);
    if (!streaming.test(left)) break;
    await sleep(50);
  }
  assert.doesNotMatch(left, streaming, "the streaming command still runs");
});

// A lying agent: the package's agent directory replaced by one whose "agent" prints
// garbage instead of the protocol. Run in a child process (the directory is read at load).
test("an agent that sends garbage: transport auto falls back to the engine path, transport agent fails clearly", { timeout: 120_000 }, (t) => {
  const dir = mkdtempSync(join(tmpdir(), "anvia-liar-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  for (const arch of ["x86_64", "aarch64"]) {
    mkdirSync(join(dir, arch));
    writeFileSync(join(dir, arch, "anvia-agent"), "#!/bin/sh\nprintf 'GARBAGE\\377\\377\\377\\377 not the protocol at all'\nsleep 2\n");
    chmodSync(join(dir, arch, "anvia-agent"), 0o755);
  }
  const script = `
    import { DockerSandboxClient } from ${JSON.stringify(fileURLToPath(new URL("../../lib/index.js", import.meta.url)))};
    const options = ${JSON.stringify(baseOptions())};
    const out = {};
    for (const transport of ["auto", "agent"]) {
      const box = await new DockerSandboxClient({ transport }).createSandbox(options);
      try {
        const r = await box.runtime.exec({ command: "echo", args: ["fine"] });
        out[transport] = { ok: new TextDecoder().decode(r.stdout) };
      } catch (e) {
        out[transport] = { code: e.code, message: e.message };
      } finally {
        await box.destroy();
      }
    }
    console.log(JSON.stringify(out));`;
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
    env: { ...process.env, ANVIA_SANDBOX_AGENT_DIR: dir },
    encoding: "utf8",
    timeout: 100_000,
  });
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout.trim().split("\n").at(-1));
  assert.deepEqual(out.auto, { ok: "fine\n" });
  assert.equal(out.agent.code, "docker_unavailable");
  assert.match(out.agent.message, /^The sandbox agent is not available: /);
});

// Root in a sandbox replaces the agent the package placed and kills the running one, as
// issue 23 says it can: the next start runs its program, which announces a 4 GiB frame and
// then streams zeros forever. The host treats it as any lying agent: the call fails with a
// typed error at once (the header is judged on its 12 bytes), its memory stays bounded,
// and nothing reaches past that container: the host's copy of the agent is unchanged,
// another sandbox's agent serves as before, and the engine path still serves this one.
test("a root sandbox that replaces its agent and kills it reaches only its own container", { timeout: 120_000 }, async () => {
  const digest = hostAgentBinary().sha256; // the host's copy, found as lib/native.js finds it
  const before = digest();
  const { sandbox, rt } = await make();
  const other = await make();
  assert.equal(text((await other.rt.exec({ command: "echo", args: ["other"] })).stdout), "other\n");
  const placed = text((await rt.exec({ command: "sh", args: ["-c", "printf '%s\\n' /.anvia/agent-*"] })).stdout).trim();
  assert.match(placed, /^\/\.anvia\/agent-[0-9a-f]{16}$/);
  const liar = "#!/bin/sh\nprintf '\\377\\377\\377\\377\\001\\000\\000\\000\\000\\000\\000\\001'\nexec cat /dev/zero\n";
  const planted = await rt.exec({
    command: "sh",
    args: ["-c", 'printf "%s" "$1" > "$2.new" && chmod 755 "$2.new" && mv "$2.new" "$2" && kill -9 $PPID', "sh", liar, placed],
  }).catch((e) => e);
  assert.ok(planted instanceof DockerSandboxError, "the call whose agent was killed fails with a typed error");
  const rss = process.memoryUsage().rss;
  for (let i = 0; i < 3; i++) {
    const e = await rt.exec({ command: "echo", args: ["hi"] }).then(() => null, (err) => err);
    assert.ok(e instanceof DockerSandboxError, `call ${i} through the planted agent: ${e}`);
    assert.match(e.message, /frame larger than the maximum|not available/);
  }
  assert.ok(process.memoryUsage().rss - rss < 64 * 1024 * 1024, "the host's memory stays bounded");
  // Nothing past the container.
  assert.equal(digest(), before, "the host's copy of the agent is unchanged");
  assert.equal(text((await other.rt.exec({ command: "echo", args: ["still"] })).stdout), "still\n");
  const engine = await new DockerSandboxClient({ transport: "engine" }).resumeSandbox({ id: sandbox.id });
  assert.equal(text((await engine.runtime.exec({ command: "cat", args: [placed] })).stdout), liar);
});

test("a non-root sandbox user cannot replace or remove the agent", { timeout: 60_000 }, async () => {
  const { rt } = await make({ user: "1000:1000" });
  const placed = text((await rt.exec({ command: "sh", args: ["-c", "printf '%s\\n' /.anvia/agent-*"] })).stdout).trim();
  const r = await rt.exec({ command: "sh", args: ["-c", 'echo x > /.anvia/new; mv /bin/true "$1"; rm -f "$1"; : > "$1"', "sh", placed] });
  assert.equal((text(r.stderr).match(/Permission denied|Operation not permitted/g) ?? []).length, 4, text(r.stderr));
  assert.equal(text((await rt.exec({ command: "echo", args: ["intact"] })).stdout), "intact\n");
});

// A command that cannot start: the agent path shows what the engine path shows (runc's
// words: on Docker exit 126 on stdout, on Podman its wrapping on stderr with exit 125-127;
// exit 1 on stderr for a file that is no program), for exec and for execStream, on the
// same container through both transports. Podman's engine path sometimes adds a line of
// its own about its attach socket being reset; that line is not the command's, and is
// dropped from its side before comparing.
test("commands that cannot start look the same through the agent as through the engine", { timeout: 90_000 }, async () => {
  const { sandbox, rt } = await make();
  // The engine-path client resumes the sandbox (which restarts a running container, as the
  // original does) before the agent's first call, so the agent is not in the restart's way.
  const engine = (await new DockerSandboxClient({ transport: "engine" }).resumeSandbox({ id: sandbox.id })).runtime;
  const setup = await rt.exec({
    command: "sh",
    args: ["-c", "printf 'just text\\n' > /usr/local/bin/notprog && chmod 755 /usr/local/bin/notprog && cp /usr/local/bin/notprog /workspace/np && : > /workspace/afile"],
  });
  assert.equal(setup.exitCode, 0, text(setup.stderr));
  // Under gVisor the engine path answers in runsc's words, and two kinds of case otherwise
  // than runc (README "Other container runtimes"): there the agent's answers are runc's
  // (src/agent/PROTOCOL.md's table), and the engine's exit code is what runsc gives.
  const gvisor = CONTAINER_RUNTIME === "runsc";
  const oci = "OCI runtime exec failed: exec failed: unable to start container process: ";
  const cwdFailed = (cwd, why) => `${oci}chdir to cwd ("/workspace/${cwd}") set in config.json failed: ${why}\r\n`;
  const runcAnswers = new Map([
    ["no-such-command-xyz", [126, `${oci}exec: "no-such-command-xyz": executable file not found in $PATH: unknown\r\n`, ""]],
    ["/no/such/file", [126, `${oci}exec: "/no/such/file": stat /no/such/file: no such file or directory: unknown\r\n`, ""]],
    ["/etc/hostname", [126, `${oci}exec: "/etc/hostname": permission denied: unknown\r\n`, ""]],
    ["/tmp", [126, `${oci}exec: "/tmp": permission denied: unknown\r\n`, ""]],
    ["notprog", [1, "", "exec /usr/local/bin/notprog: exec format error\n"]],
    ["./np", [1, "", "exec ./np: exec format error\n"]],
    ["cwd no/such/dir", [126, cwdFailed("no/such/dir", "no such file or directory: unknown"), ""]],
    [
      "cwd afile",
      [126, cwdFailed("afile", "not a directory: unknown: Are you trying to mount a directory onto a file (or vice-versa)? Check if the specified host path exists and is the expected type"), ""],
    ],
  ]);
  // runsc runs a command whose cwd is a file, and fails a file that is not a program with 126.
  const gvisorEngineExit = { notprog: 126, "./np": 126, "cwd afile": 0 };
  const cases = [
    { command: "no-such-command-xyz" },
    { command: "/no/such/file" },
    { command: "/etc/hostname" },
    { command: "/tmp" },
    { command: "notprog" },
    { command: "./np" },
    { command: "true", cwd: "no/such/dir" },
    { command: "true", cwd: "afile" },
  ];
  const shape = (r) => ({ exitCode: r.exitCode, stdout: text(r.stdout), stderr: text(r.stderr) });
  const attachNoise = /^Error: read unixpacket @->\/proc\/self\/fd\/\d+\/attach: read: connection reset by peer\n/gm;
  const engineShape = (r) => {
    const s = shape(r);
    return isPodman ? { ...s, stderr: s.stderr.replace(attachNoise, "") } : s;
  };
  async function streamed(runtime, c) {
    const out = { stdout: "", stderr: "" };
    for await (const e of runtime.execStream(c)) {
      if (e.type === "result") out.exitCode = e.result.exitCode;
      else out[e.type] += text(e.data);
    }
    return out;
  }
  for (const c of cases) {
    let want = engineShape(await engine.exec(c));
    const key = c.cwd ? `cwd ${c.cwd}` : c.command;
    const [exitCode, stdout, stderr] = runcAnswers.get(key);
    if (gvisor) {
      assert.equal(want.exitCode, gvisorEngineExit[key] ?? 126, `gVisor's engine path, ${JSON.stringify(c)}: ${JSON.stringify(want)}`);
      want = { exitCode, stdout, stderr };
    } else if (!isPodman) {
      assert.deepEqual(want, { exitCode, stdout, stderr }, `runc's answer on the engine path (the table above), ${JSON.stringify(c)}`);
    }
    assert.notEqual(want.exitCode, 0, JSON.stringify(c));
    assert.deepEqual(shape(await rt.exec(c)), want, `exec ${JSON.stringify(c)}`);
    const s = await streamed(rt, c);
    assert.deepEqual({ exitCode: s.exitCode, stdout: s.stdout, stderr: s.stderr }, want, `execStream ${JSON.stringify(c)}`);
  }
});

// Managed processes through the agent: started as detached agent commands. A command that
// kills the agent does not take them with it; stopProcess still ends them (found by their
// process group), and listing and logs stay the registry's.
test("managed processes outlive a killed agent and are still stopped by stopProcess", { timeout: 60_000 }, async () => {
  const { rt, container } = await make();
  const p = await rt.startProcess({ command: "sh", args: ["-c", "echo up; exec sleep 3203"] });
  assert.equal(p.status, "running");
  const logs = async () => text((await rt.readProcessLogs({ processId: p.id })).stdout);
  for (let i = 0; i < 100 && !/up/.test(await logs()); i++) await sleep(20);
  assert.equal(await logs(), "up\n");
  await rt.exec({ command: "sh", args: ["-c", "kill -9 $PPID"] }).catch(() => {});
  assert.match(await processes(container), /sleep 3203/, "the managed process died with the agent");
  assert.equal((await rt.listProcesses())[0].status, "running");
  const stopped = await rt.stopProcess({ processId: p.id, gracePeriodMs: 2000 });
  assert.equal(stopped.status, "stopped");
  assert.doesNotMatch(await processes(container), /sleep 3203/);
  const r = await rt.exec({ command: "echo", args: ["still served"] });
  assert.equal(text(r.stdout), "still served\n");
});

// The host goes away without a word (SIGKILL): the agent sees its input end and ends the
// commands it ran for it; managed processes live on, as they do on the engine path.
test("when the Node process dies, the agent ends its commands and managed processes live on", { timeout: 90_000 }, async () => {
  const { sandbox, container } = await make();
  const script = `
    import { DockerSandboxClient } from ${JSON.stringify(fileURLToPath(new URL("../../lib/index.js", import.meta.url)))};
    const box = await new DockerSandboxClient({ transport: "agent" }).resumeSandbox({ id: ${JSON.stringify(sandbox.id)} });
    await box.runtime.startProcess({ command: "sleep", args: ["3301"] });
    box.runtime.exec({ command: "sleep", args: ["3302"] });
    setInterval(() => {}, 1000);
    console.log("ready");`;
  const child = (await import("node:child_process")).spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "inherit"] });
  await new Promise((resolve, reject) => {
    child.stdout.on("data", (d) => /ready/.test(d) && resolve());
    child.on("exit", (code) => reject(new Error(`child exited ${code}`)));
  });
  for (let i = 0; i < 100 && !/sleep 3302/.test(await processes(container)); i++) await sleep(20);
  child.kill("SIGKILL");
  let left = "";
  for (let i = 0; i < 200; i++) {
    left = await processes(container);
    if (!/sleep 3302/.test(left)) break;
    await sleep(50);
  }
  assert.doesNotMatch(left, /sleep 3302/, "the exec'd command outlived its host");
  assert.match(left, /sleep 3301/, "the managed process died with its host");
});
