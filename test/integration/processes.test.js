// Managed processes and published ports on a real engine: a web server reachable from the
// host, stop and resume, TERM-proof processes and their children, aborted starts, log
// tails, the process limit, and the original's errors.
import test from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { DockerSandboxClient, DockerSandboxError } from "../../lib/index.js";
import { CONTAINER_RUNTIME, baseOptions, dockerExec } from "../helpers/docker.js";

const client = new DockerSandboxClient();
const decode = (bytes) => new TextDecoder().decode(bytes);

async function processTable(sandbox) {
  const out = await dockerExec(`anvia-sandbox-${sandbox.id}`, ["ps", "-eo", "pid,args"]);
  return out.stdout;
}

// A page of a server on a published port, fetched from the host. The test dockerd's runsc
// has no network (README "Other container runtimes"): under it, fetched inside the sandbox
// over its loopback. Rejects when nothing answers.
async function page(rt, port, path) {
  if (CONTAINER_RUNTIME === "runsc") {
    const r = await rt.exec({ command: "busybox", args: ["wget", "-qO-", `http://127.0.0.1:${port.containerPort}${path}`] });
    if (r.exitCode !== 0) throw new Error(`wget: exit ${r.exitCode}: ${decode(r.stderr)}`);
    return decode(r.stdout);
  }
  const res = await fetch(`http://127.0.0.1:${port.hostPort}${path}`);
  assert.equal(res.status, 200);
  return res.text();
}

async function eventually(check, timeoutMs = 3000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
}

test("a web server on a published port: start, waitForPort, fetch from the host, stop", async (t) => {
  const sandbox = await client.createSandbox(
    baseOptions({ network: { mode: "bridge", ports: [8080] }, files: { "www/index.html": "<h1>sandbox page</h1>" } }),
  );
  t.after(() => sandbox.destroy());
  const server = await sandbox.runtime.startProcess({ command: "busybox", args: ["httpd", "-f", "-p", "8080", "-h", "www"] });
  assert.equal(server.status, "running");
  assert.equal(server.command, "busybox");
  assert.deepEqual(server.args, ["httpd", "-f", "-p", "8080", "-h", "www"]);
  assert.match(server.startedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.equal("exitCode" in server, false);
  const port = await sandbox.runtime.waitForPort({ containerPort: 8080, timeoutMs: 10_000 });
  assert.deepEqual(port, sandbox.runtime.publishedPorts[0]);
  assert.equal(Object.isFrozen(port), false); // a copy, as the original returned
  assert.equal(await page(sandbox.runtime, port, "/index.html"), "<h1>sandbox page</h1>");
  const stopped = await sandbox.runtime.stopProcess({ processId: server.id, gracePeriodMs: 2000 });
  assert.equal(stopped.status, "stopped");
  assert.equal(typeof stopped.exitCode, "number");
  assert.match(stopped.endedAt, /Z$/);
  await assert.rejects(page(sandbox.runtime, port, "/index.html"));
  assert.doesNotMatch(await processTable(sandbox), /httpd/);
});

test("stop then resume: ports come back, the registry is empty, a new server on the same port works", async (t) => {
  const sandbox = await client.createSandbox(
    baseOptions({ network: { mode: "bridge", ports: [8081] }, files: { "index.html": "one" } }),
  );
  const server = await sandbox.runtime.startProcess({ command: "busybox", args: ["httpd", "-f", "-p", "8081"] });
  await sandbox.runtime.waitForPort({ containerPort: 8081 });
  await sandbox.stop(); // ends every managed process first
  assert.equal(sandbox.state, "stopped");
  await assert.rejects(sandbox.runtime.listProcesses(), { code: "invalid_state" });
  const resumed = await client.resumeSandbox({ id: sandbox.id });
  t.after(() => resumed.destroy());
  assert.deepEqual(resumed.runtime.publishedPorts.map((p) => [p.containerPort, p.host, p.protocol]), [[8081, "127.0.0.1", "tcp"]]);
  assert.ok(resumed.runtime.publishedPorts[0].hostPort > 0);
  assert.deepEqual(await resumed.runtime.listProcesses(), []);
  await assert.rejects(resumed.runtime.readProcessLogs({ processId: server.id }), {
    code: "process",
    message: `Unknown sandbox process: ${server.id}`,
  });
  await resumed.runtime.writeTextFile({ path: "index.html", text: "two" });
  await resumed.runtime.startProcess({ command: "busybox", args: ["httpd", "-f", "-p", "8081"] });
  const port = await resumed.runtime.waitForPort({ containerPort: 8081 });
  assert.equal(await page(resumed.runtime, port, "/index.html"), "two");
});

test("a process that ignores TERM is killed after the grace period, with every child", async (t) => {
  const sandbox = await client.createSandbox(baseOptions());
  t.after(() => sandbox.destroy());
  const stubborn = await sandbox.runtime.startProcess({
    command: "sh",
    args: ["-c", "trap '' TERM; sleep 1001 & sleep 1002 & (sleep 1003; true) & wait"],
  });
  assert.match(await eventually(async () => (/sleep 1003/.test(await processTable(sandbox)) ? await processTable(sandbox) : "")), /sleep 1001/);
  const started = performance.now();
  const stopped = await sandbox.runtime.stopProcess({ processId: stubborn.id, gracePeriodMs: 700 });
  const elapsed = performance.now() - started;
  assert.equal(stopped.status, "stopped");
  assert.ok(elapsed >= 700, `returned after ${elapsed} ms, before the grace period ended`);
  assert.doesNotMatch(await processTable(sandbox), /sleep 100[123]/);
  // A process that honours TERM stops quickly, and its children die with it.
  const polite = await sandbox.runtime.startProcess({ command: "sh", args: ["-c", "sleep 2001 & sleep 2002 & wait"] });
  assert.match(await eventually(async () => await processTable(sandbox)), /sleep 200/);
  const t0 = performance.now();
  await sandbox.runtime.stopProcess({ processId: polite.id });
  assert.ok(performance.now() - t0 < 3000);
  assert.doesNotMatch(await processTable(sandbox), /sleep 200[12]/);
});

test("a start aborted right after the call never runs the command", async (t) => {
  const sandbox = await client.createSandbox(baseOptions());
  t.after(() => sandbox.destroy());
  for (const delay of [-1, 0, 1, 5, 20]) {
    const controller = new AbortController();
    const reason = new Error(`abort ${delay}`);
    const pending = sandbox.runtime.startProcess({
      command: "touch",
      args: [`ran-${delay}.txt`],
      abortSignal: controller.signal,
    });
    if (delay < 0) controller.abort(reason);
    else setTimeout(() => controller.abort(reason), delay);
    let started;
    try {
      started = await pending;
    } catch (error) {
      assert.equal(error, reason);
    }
    if (started === undefined) {
      await new Promise((r) => setTimeout(r, 400));
      const ls = await dockerExec(`anvia-sandbox-${sandbox.id}`, ["busybox", "ls", "/workspace"]);
      assert.doesNotMatch(ls.stdout, new RegExp(`ran-${delay}`), `the aborted command ran (delay ${delay})`);
      // Not listed (an earlier start that completed before its abort is, and stays).
      const listed = (await sandbox.runtime.listProcesses()).filter((p) => p.args[0] === `ran-${delay}.txt`);
      assert.deepEqual(listed, [], `the aborted start is listed (delay ${delay})`);
    } else {
      // The abort came after the start completed: the command did run, and is listed.
      assert.equal((await sandbox.runtime.listProcesses()).length >= 1, true);
      await sandbox.runtime.stopProcess({ processId: started.id, gracePeriodMs: 0 }).catch(() => undefined);
    }
  }
  // A start that times out (commandTimeoutMs) never runs the command either.
  const hurried = await client.createSandbox(baseOptions({ runtime: { commandTimeoutMs: 1 } }));
  t.after(() => hurried.destroy());
  await assert.rejects(hurried.runtime.startProcess({ command: "touch", args: ["late.txt"] }), {
    name: "DockerSandboxError",
    code: "timeout",
    message: "Starting sandbox process timed out.",
  });
  await new Promise((r) => setTimeout(r, 400));
  assert.doesNotMatch((await dockerExec(`anvia-sandbox-${hurried.id}`, ["busybox", "ls", "/workspace"])).stdout, /late/);
  assert.deepEqual(await hurried.runtime.listProcesses(), []);
});

test("logs keep exactly the tail of 5 MiB of output, flag truncation, and tailBytes slices it", async (t) => {
  const max = 64 * 1024;
  const sandbox = await client.createSandbox(baseOptions({ runtime: { maxOutputBytes: max } }));
  t.after(() => sandbox.destroy());
  // 5 MiB of numbered lines on stdout, a little on stderr.
  const script = "i=0; while [ $i -lt 5242880 ]; do printf '%010d\\n' $i; i=$((i + 11)); done; echo done >&2";
  const proc = await sandbox.runtime.startProcess({ command: "sh", args: ["-c", script] });
  const finished = await eventually(async () => {
    const list = await sandbox.runtime.listProcesses();
    return list.find((p) => p.id === proc.id && p.status === "exited");
  }, 120_000);
  assert.ok(finished, "the process finished");
  assert.equal(finished.exitCode, 0);
  const expected = Buffer.from(
    Array.from({ length: Math.ceil(5242880 / 11) }, (_, k) => `${String(k * 11).padStart(10, "0")}\n`).join(""),
  );
  const logs = await sandbox.runtime.readProcessLogs({ processId: proc.id });
  assert.equal(logs.stdout.byteLength, max);
  assert.equal(Buffer.compare(Buffer.from(logs.stdout), expected.subarray(expected.length - max)), 0);
  assert.equal(logs.stdoutTruncated, true);
  assert.equal(decode(logs.stderr), "done\n");
  assert.equal(logs.stderrTruncated, false);
  const tail = await sandbox.runtime.readProcessLogs({ processId: proc.id, tailBytes: 22 });
  assert.equal(decode(tail.stdout), expected.subarray(expected.length - 22).toString());
  assert.equal(tail.stdoutTruncated, true);
  assert.equal(decode(tail.stderr), "done\n");
  assert.equal(tail.stderrTruncated, false);
  const none = await sandbox.runtime.readProcessLogs({ processId: proc.id, tailBytes: 0 });
  assert.equal(none.stdout.byteLength, 0);
  assert.equal(none.stderrTruncated, true);
  assert.equal(createHash("sha256").update(logs.stdout).digest("hex"), createHash("sha256").update(expected.subarray(expected.length - max)).digest("hex"));
});

test("maxProcesses: the original's error, and a new start succeeds once one has exited", async (t) => {
  const sandbox = await client.createSandbox(baseOptions({ runtime: { maxProcesses: 2 } }));
  t.after(() => sandbox.destroy());
  const a = await sandbox.runtime.startProcess({ command: "sleep", args: ["300"] });
  const b = await sandbox.runtime.startProcess({ command: "sh", args: ["-c", "sleep 1; exit 3"] });
  await assert.rejects(sandbox.runtime.startProcess({ command: "sleep", args: ["300"] }), {
    name: "DockerSandboxError",
    code: "process",
    message: "Sandbox process limit reached (2 >= 2).",
  });
  const exited = await eventually(async () => (await sandbox.runtime.listProcesses()).find((p) => p.id === b.id && p.status === "exited"), 10_000);
  assert.equal(exited.exitCode, 3);
  const c = await sandbox.runtime.startProcess({ command: "sleep", args: ["300"] });
  const ids = (await sandbox.runtime.listProcesses()).map((p) => p.id);
  assert.deepEqual(ids, [a.id, c.id]);
  const zero = await client.createSandbox(baseOptions({ runtime: { maxProcesses: 0 } }));
  t.after(() => zero.destroy());
  await assert.rejects(zero.runtime.startProcess({ command: "true" }), { message: "Sandbox process limit reached (0 >= 0)." });
});

test("process errors and validation are the original's", async (t) => {
  const sandbox = await client.createSandbox(baseOptions({ network: { mode: "bridge", ports: [9000] } }));
  t.after(() => sandbox.destroy());
  const rt = sandbox.runtime;
  await assert.rejects(rt.startProcess(null), { name: "TypeError", message: "options must be an object." });
  await assert.rejects(rt.startProcess({ command: "" }), { name: "TypeError", message: "command must be a non-empty string." });
  await assert.rejects(rt.startProcess({ command: "x", args: [1] }), { message: "args must contain only strings." });
  await assert.rejects(rt.startProcess({ command: "x", cwd: "../up" }), { code: "invalid_path", message: "Sandbox path cannot leave the workspace: ../up" });
  await assert.rejects(rt.startProcess({ command: "x", env: { "bad-name": "1" } }), { message: "Invalid environment variable name: bad-name" });
  await assert.rejects(rt.startProcess({ command: "   " }), { code: "process", message: "Sandbox process command cannot be empty." });
  await assert.rejects(rt.readProcessLogs({ processId: "" }), { name: "TypeError", message: "processId must be a non-empty string." });
  await assert.rejects(rt.readProcessLogs({ processId: "x", tailBytes: -1 }), { name: "RangeError", message: "tailBytes must be a non-negative safe integer." });
  await assert.rejects(rt.readProcessLogs({ processId: "nope" }), { code: "process", message: "Unknown sandbox process: nope" });
  await assert.rejects(rt.stopProcess({ processId: "nope" }), { code: "process", message: "Unknown sandbox process: nope" });
  await assert.rejects(rt.stopProcess({ processId: "x", gracePeriodMs: 1.5 }), { name: "RangeError", message: "gracePeriodMs must be a non-negative safe integer." });
  await assert.rejects(rt.listProcesses(5), { name: "TypeError", message: "options must be an object." });
  await assert.rejects(rt.waitForPort({ containerPort: 0 }), { code: "port", message: "Sandbox port must be an integer from 1 to 65535: 0" });
  await assert.rejects(rt.waitForPort({ containerPort: 1234 }), { code: "port", message: "Sandbox port is not published: 1234/tcp" });
  await assert.rejects(rt.waitForPort({ containerPort: 9000, timeoutMs: 0 }), { name: "RangeError", message: "timeoutMs must be a positive safe integer." });
  await assert.rejects(rt.waitForPort({ containerPort: 9000, intervalMs: -1 }), { name: "RangeError", message: "intervalMs must be a positive safe integer." });
  const started = performance.now();
  await assert.rejects(rt.waitForPort({ containerPort: 9000, timeoutMs: 600, intervalMs: 50 }), (error) => {
    assert.ok(error instanceof DockerSandboxError);
    assert.equal(error.code, "timeout");
    assert.equal(error.message, "Waiting for sandbox port timed out: 9000");
    return true;
  });
  assert.ok(performance.now() - started >= 550);
  const controller = new AbortController();
  const waiting = rt.waitForPort({ containerPort: 9000, abortSignal: controller.signal });
  const reason = new Error("no more waiting");
  setTimeout(() => controller.abort(reason), 100);
  await assert.rejects(waiting, (e) => e === reason);
});

test("destroy ends every managed process before removing the container", async () => {
  const sandbox = await client.createSandbox(baseOptions());
  await sandbox.runtime.startProcess({ command: "sleep", args: ["500"] });
  await sandbox.runtime.startProcess({ command: "sh", args: ["-c", "trap '' TERM; sleep 501"] });
  await sandbox.destroy();
  assert.equal(sandbox.state, "destroyed");
  await assert.rejects(sandbox.runtime.listProcesses(), { code: "invalid_state" });
});
