// The upgraded exec stream gone wrong: cut mid-frame and between frames, a frame header
// announcing 4 GiB, unknown frame types, the engine's own error frames, upgrades refused
// with an error reply, broken response heads, and the happy path split into single bytes.
import test from "node:test";
import assert from "node:assert/strict";
import {
  HANG_MS,
  expectCode,
  fakeSandbox,
  frame,
  frameHeader,
  head,
  isKiller,
  mib,
  notKiller,
  rawExecStart,
  reply,
  sleep,
  loopTurns,
  until,
  upgradeHead,
  chunked,
} from "../helpers/fake-engine.js";

const T = { timeout: HANG_MS }; // a hang fails after minutes; no test races a timer

/** Waits for the kill-tree exec, however long it takes (the test's timeout bounds it). */
function waitForKiller(fake) {
  return until(() => [...fake.state.execs.values()].find(isKiller));
}

// ---- cuts ------------------------------------------------------------------------------------------

test("stream cut mid-frame (payload short of its length, then FIN)", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/exec/:id/start", rawExecStart([upgradeHead(), frame(1, "whole\n"), frameHeader(1, 100), "only part"], { then: "end" }));
  await expectCode(runtime.exec({ command: "yes" }), "docker_command_failed", /inside a frame \(91 payload bytes missing\)/);
  // The command may still run: its process tree is ended.
  await waitForKiller(fake);
});

test("stream cut mid-frame (payload short of its length, then the connection destroyed)", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/exec/:id/start", rawExecStart([upgradeHead(), frameHeader(2, 50), "err"], { then: "destroy" }));
  await expectCode(runtime.exec({ command: "yes" }), "docker_command_failed", /inside a frame|connection failed/);
});

test("stream cut inside a frame header", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/exec/:id/start", rawExecStart([upgradeHead(), frame(1, "ok\n"), Buffer.from([1, 0, 0])], { then: "end" }));
  await expectCode(runtime.exec({ command: "yes" }), "docker_command_failed", /inside a frame header \(3 of 8 bytes\)/);
});

test("execStream cut mid-frame: the events before the cut, then the error", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/exec/:id/start", rawExecStart([upgradeHead(), frame(1, "one\n"), frame(2, "two\n"), frameHeader(1, 10), "thr"], { then: "end" }));
  const events = [];
  const err = await expectCode(
    (async () => {
      for await (const e of runtime.execStream({ command: "yes" })) events.push(e);
    })(),
    "docker_command_failed",
    /inside a frame/,
  );
  assert.ok(err);
  const text = events.map((e) => `${e.type}:${Buffer.from(e.data).toString()}`).join("");
  // The partial frame's bytes are passed on as they arrive: "thr" may be there.
  assert.match(text, /^stdout:one\nstderr:two\n(stdout:thr)?$/);
});

test("stream cut between frames while the command still runs: the exit code is never reported", T, async (t) => {
  // Between frames, a cut looks like the end of the stream; the exec inspection tells.
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/exec/:id/start", rawExecStart([upgradeHead(), frame(1, "a\n"), frame(1, "b\n")], { then: "destroy" }));
  fake.route("GET", "/exec/:id/json", notKiller({ json: { Running: true, ExitCode: 0 } }));
  await expectCode(runtime.exec({ command: "yes" }), "docker_command_failed", /did not report the exit code/);
});

test("stream cut between frames after the command ended: its output and exit code", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/exec/:id/start", rawExecStart([upgradeHead(), frame(1, "a\n"), frame(2, "b\n")], { then: "destroy" }));
  fake.route("GET", "/exec/:id/json", notKiller({ json: { Running: false, ExitCode: 3 } }));
  const r = await runtime.exec({ command: "yes" });
  assert.equal(r.status, "exited");
  assert.equal(r.exitCode, 3);
  assert.equal(Buffer.from(r.stdout).toString(), "a\n");
  assert.equal(Buffer.from(r.stderr).toString(), "b\n");
});

// ---- lying and unknown frames ----------------------------------------------------------------------

test("a frame header announcing 4 GiB, a short payload and EOF: a clean error, no memory jump", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  await runtime.exec({ command: "echo", args: ["warm"] });
  fake.route("POST", "/exec/:id/start", rawExecStart([upgradeHead(), frameHeader(1, 0xffffffff), "short payload"], { then: "end" }));
  const before = process.memoryUsage().rss;
  await expectCode(runtime.exec({ command: "yes" }), "docker_command_failed", /inside a frame \(4294967282 payload bytes missing\)/);
  const grown = mib(process.memoryUsage().rss - before);
  assert.ok(grown < 50, `rss grew ${grown.toFixed(1)} MiB`);
});

test("a 4 GiB frame streaming 64 MiB: output stays bounded by maxOutputBytes, memory does not follow", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  await runtime.exec({ command: "echo", args: ["warm"] });
  const mb = Buffer.alloc(1024 * 1024, 0x61);
  fake.route(
    "POST",
    "/exec/:id/start",
    notKiller(async (req, res, ctx) => {
      ctx.conn.hijack();
      await res.write(upgradeHead());
      // Apart from the head (see the coalesced-head case below for the two together).
      await sleep(50);
      await loopTurns(10); // the library has read the head, however late the timer fired
      await res.write(frameHeader(1, 0xffffffff));
      for (let i = 0; i < 64; i++) if (!(await res.write(mb))) break;
      res.end();
    }),
  );
  const before = process.memoryUsage().rss;
  const err = await expectCode(runtime.exec({ command: "yes" }), "docker_command_failed", /inside a frame/);
  assert.ok(err);
  const grown = mib(process.memoryUsage().rss - before);
  assert.ok(grown < 50, `rss grew ${grown.toFixed(1)} MiB`);
});

test("a frame of type 7", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/exec/:id/start", rawExecStart([upgradeHead(), frame(1, "fine\n"), frame(7, "what is this"), frame(1, "more\n")], { then: "end" }));
  await expectCode(runtime.exec({ command: "yes" }), "docker_command_failed", /unknown stream type: 7/);
  await waitForKiller(fake);
});

test("a frame of type 7 as the very first bytes after the head (same write)", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/exec/:id/start", rawExecStart(Buffer.concat([upgradeHead(), frame(7, "x")]), { then: "hang" }));
  await expectCode(runtime.exec({ command: "yes" }), "docker_command_failed", /unknown stream type: 7/);
});

test("the engine's own error frame (type 3) is reported as its text", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/exec/:id/start", rawExecStart([upgradeHead(), frame(3, "OCI runtime exec failed: no such file\n")], { then: "end" }));
  await expectCode(runtime.exec({ command: "nope" }), "docker_command_failed", /reported an error: OCI runtime exec failed: no such file$/);
});

test("zero-length frames and stdin-typed frames are accepted", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/exec/:id/start", rawExecStart([upgradeHead(), frame(1, ""), frame(0, "in0\n"), frame(2, ""), frame(1, "out\n")], { then: "end" }));
  const r = await runtime.exec({ command: "yes" });
  assert.equal(r.exitCode, 0);
  assert.equal(Buffer.from(r.stdout).toString(), "in0\nout\n");
});

// ---- upgrade refused ---------------------------------------------------------------------------------

test("exec start refused with 404 and {message: No such exec instance}", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/exec/:id/start", notKiller({ raw: reply(404, JSON.stringify({ message: "No such exec instance" }), { "Content-Type": "application/json" }) }));
  const err = await expectCode(runtime.exec({ command: "echo" }), "docker_command_failed", /No such exec instance/);
  assert.equal(err.details.statusCode, 404);
  assert.equal(err.details.message, "No such exec instance");
});

test("exec start refused with 404, the body ended by closing the connection (no Content-Length)", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route(
    "POST",
    "/exec/:id/start",
    notKiller({ raw: [head(404, { "Content-Type": "application/json" }), JSON.stringify({ message: "No such exec instance" })], then: "end" }),
  );
  const err = await expectCode(runtime.exec({ command: "echo" }), "docker_command_failed", /No such exec instance/);
  assert.equal(err.details.statusCode, 404);
});

test("exec start refused with 409 and a chunked JSON body on a kept-alive connection", T, async (t) => {
  // Plain HTTP/1.1: an error reply framed by chunks, the connection left open.
  const { fake, runtime } = await fakeSandbox(t);
  fake.route(
    "POST",
    "/exec/:id/start",
    notKiller({
      raw: [head(409, { "Content-Type": "application/json", "Transfer-Encoding": "chunked" }), chunked(JSON.stringify({ message: "exec is already running" }))],
      then: "hang",
    }),
  );
  // The timeout only turns a hang (waiting for the connection to close) into a clear
  // failure, after minutes, before the test's own timeout.
  const err = await expectCode(runtime.exec({ command: "echo", timeoutMs: HANG_MS / 2 }), "docker_command_failed", /exec is already running/);
  assert.equal(err.details.statusCode, 409);
  assert.equal(err.details.message, "exec is already running");
});

test("exec start refused with 200 and a JSON body: an error (code)", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/exec/:id/start", notKiller({ raw: reply(200, JSON.stringify({ message: "upgrade not supported here" }), { "Content-Type": "application/json" }) }));
  await expectCode(runtime.exec({ command: "echo" }), "docker_command_failed");
});

test("exec start refused with 200 and a JSON body: the engine's message is reported", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/exec/:id/start", notKiller({ raw: reply(200, JSON.stringify({ message: "upgrade not supported here" }), { "Content-Type": "application/json" }) }));
  const err = await expectCode(runtime.exec({ command: "echo" }), "docker_command_failed");
  assert.match(err.message, /upgrade not supported here/, "the JSON reply is read as an error reply, not as frames");
});

test("exec start answered 200 with the raw stream (older engines): accepted", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/exec/:id/start", rawExecStart([head(200, { "Content-Type": "application/vnd.docker.raw-stream" }), frame(1, "old engine\n")], { then: "end" }));
  const r = await runtime.exec({ command: "echo" });
  assert.equal(Buffer.from(r.stdout).toString(), "old engine\n");
});

// ---- broken heads ---------------------------------------------------------------------------------------

test("exec start: connection closed before any answer", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/exec/:id/start", notKiller({ destroy: true }));
  await expectCode(runtime.exec({ command: "echo" }), "docker_command_failed", /closed the connection before answering exec start/);
});

test("exec start: a status line that is not HTTP", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/exec/:id/start", rawExecStart("SSH-2.0-OpenSSH_9.2\r\n\r\n", { then: "hang" }));
  await expectCode(runtime.exec({ command: "echo" }), "docker_command_failed", /malformed response to exec start/);
});

test("exec start: a response head that never ends is bounded", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  const endless = "HTTP/1.1 101 UPGRADED\r\n" + "X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n".repeat(2000);
  fake.route("POST", "/exec/:id/start", rawExecStart(endless, { then: "hang" }));
  await expectCode(runtime.exec({ command: "echo" }), "docker_command_failed", /oversized response head/);
});

test("the 101 head and 32 KiB of output arriving in one read are both taken", T, async (t) => {
  // A fast command's output can sit in the socket behind the head: the first read then
  // holds the head and the start of the stream, more than a head alone may be.
  const { fake, runtime } = await fakeSandbox(t);
  const out = Buffer.alloc(32 * 1024, 0x62);
  fake.route("POST", "/exec/:id/start", rawExecStart(Buffer.concat([upgradeHead(), frame(1, out)]), { then: "end" }));
  const r = await runtime.exec({ command: "cat", args: ["big"] });
  assert.equal(r.status, "exited");
  assert.equal(r.stdout.length, out.length);
});

// ---- the happy path, the hard way -------------------------------------------------------------------

test("head and frames written one byte at a time are assembled", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route(
    "POST",
    "/exec/:id/start",
    rawExecStart([upgradeHead(), frame(1, "hello "), frame(2, "warn\n"), frame(1, "world\n")], { split: 1, delayMs: 1, then: "end" }),
  );
  const r = await runtime.exec({ command: "echo" });
  assert.equal(r.status, "exited");
  assert.equal(Buffer.from(r.stdout).toString(), "hello world\n");
  assert.equal(Buffer.from(r.stderr).toString(), "warn\n");
});

test("stdin goes to the engine and is half-closed; the output comes back", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  const input = Buffer.alloc(512 * 1024);
  for (let i = 0; i < input.length; i++) input[i] = (i * 7) & 0xff;
  const r = await runtime.exec({ command: "cat", input });
  assert.equal(r.exitCode, 0);
  assert.ok(Buffer.from(r.stdout).equals(input));
  const exec = [...fake.state.execs.values()].find((e) => e.body.Cmd[0] === "cat");
  assert.equal(exec.body.AttachStdin, true);
  assert.ok(exec.stdin.equals(input));
});

test("stdin to a command whose stream the engine cuts before reading it", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/exec/:id/start", rawExecStart([upgradeHead(), frame(1, "bye\n")], { then: "destroy" }));
  const r = await runtime.exec({ command: "head", args: ["-c0"], input: Buffer.alloc(4 * 1024 * 1024, 1) });
  assert.equal(r.status, "exited");
  assert.equal(Buffer.from(r.stdout).toString(), "bye\n");
});
