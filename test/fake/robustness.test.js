// Cases found while building the fake engine, aimed at crashes and hangs: operations torn
// down from every side (stop/destroy, a consumer that walks away, aborts at random moments,
// the engine vanishing under many operations), back-pressure against an endless stream, and
// garbage where the library parses a command's output.
import test from "node:test";
import assert from "node:assert/strict";
import {
  HANG_MS,
  DockerSandboxClient,
  DockerSandboxError,
  expectCode,
  fakeSandbox,
  frame,
  frameHeader,
  mib,
  notKiller,
  sleep,
  loopTurns,
  startFakeEngine,
  until,
  upgradeHead,
} from "../helpers/fake-engine.js";

const T = { timeout: HANG_MS }; // a hang fails after minutes; no test races a timer

/**
 * An exec start that streams `chunk` as stdout frames until the connection is gone. In
 * `stats`: `written`, `blocked` (a write is waiting because the socket took less than all
 * of it: the reader is behind) and `ended` (the connection is gone).
 */
function endlessStream(chunk, stats = { written: 0 }) {
  stats.blocked = false;
  stats.ended = false;
  return notKiller(async (req, res, ctx) => {
    ctx.conn.hijack();
    await res.write(upgradeHead());
    // Apart from the head: a head and a full read of stream in one read is its own case
    // (exec-stream.test.js, "the 101 head and 32 KiB of output arriving in one read").
    await sleep(50);
    await loopTurns(10); // the library has read the head, however late the timer fired
    const f = frame(1, chunk);
    while (!res.destroyed) {
      const wrote = res.write(f);
      stats.blocked = res.socket.writableLength > 0;
      if (!(await wrote)) break;
      stats.blocked = false;
      stats.written += chunk.length;
    }
    stats.ended = true;
  });
}

test("destroy() while an exec is stuck: the exec rejects with invalid_state, destroy completes", T, async (t) => {
  const { fake, runtime, sandbox } = await fakeSandbox(t, { id: "d1" });
  fake.route("POST", "/exec/:id/start", notKiller({ hang: true }));
  const running = expectCode(runtime.exec({ command: "sleep", args: ["100"] }), "invalid_state", /being destroyed/);
  // Stuck: its exec start reached the fake, which never answers it.
  await fake.waitFor("POST", /^\/exec\/[^/]+\/start$/);
  await sandbox.destroy();
  await running;
  assert.equal(sandbox.state, "destroyed");
  assert.equal(fake.seen("DELETE", "/containers/anvia-sandbox-d1").length, 1);
});

test("stop() while a readFile is stuck: the read rejects with invalid_state, stop completes", T, async (t) => {
  const { fake, runtime, sandbox } = await fakeSandbox(t, { id: "d2" });
  fake.route("GET", "/containers/:name/archive", { hang: true });
  const reading = expectCode(runtime.readFile({ path: "a.txt" }), "invalid_state", /stopping/);
  await fake.waitFor("GET", "/archive");
  await sandbox.stop();
  await reading;
  assert.equal(sandbox.state, "stopped");
});

test("an execStream consumer that breaks out of an endless stream ends it", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  const stats = { written: 0 };
  const undo = fake.route("POST", "/exec/:id/start", endlessStream(Buffer.alloc(16 * 1024, 0x79), stats));
  let seen = 0;
  for await (const event of runtime.execStream({ command: "yes" })) {
    if (event.type === "stdout") seen += event.data.length;
    if (seen > 1024 * 1024) break;
  }
  const at = stats.written;
  // Ended: the connection goes (waited for, however long that takes here), and little
  // more was written to it after the break.
  await until(() => stats.ended);
  assert.ok(stats.written - at < 4 * 1024 * 1024, "the connection stopped being read");
  // The sandbox is still usable.
  undo();
  const r = await runtime.exec({ command: "echo", args: ["next"] });
  assert.equal(Buffer.from(r.stdout).toString(), "next\n");
});

test("a slow execStream consumer: back-pressure reaches the engine, memory stays flat", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  await runtime.exec({ command: "echo", args: ["warm"] });
  const stats = { written: 0 };
  fake.route("POST", "/exec/:id/start", endlessStream(Buffer.alloc(64 * 1024, 0x7a), stats));
  const before = process.memoryUsage().rss;
  let seen = 0;
  let paused = false;
  for await (const event of runtime.execStream({ command: "yes" })) {
    seen += event.data?.length ?? 0;
    if (!paused && seen > 512 * 1024) {
      paused = true;
      // Stop consuming for a while: the engine must be held back, not buffered into memory.
      // At least 500 ms, and until the engine's writes block (the library stopped reading),
      // however long that takes here, unless it wrote too much first.
      const at = stats.written;
      const pausedAt = Date.now();
      await until(() => (Date.now() - pausedAt >= 500 && stats.blocked) || stats.written - at >= 8 * 1024 * 1024);
      const during = stats.written - at;
      assert.ok(during < 8 * 1024 * 1024, `the engine wrote ${mib(during).toFixed(1)} MiB while nobody read`);
    }
    if (seen > 32 * 1024 * 1024) break;
  }
  const grown = mib(process.memoryUsage().rss - before);
  assert.ok(grown < 50, `rss grew ${grown.toFixed(1)} MiB`);
});

test("many operations queued behind a slow /_ping all go through once it answers", T, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  for (let i = 0; i < 10; i++) fake.addContainer(`q${i}`);
  fake.route(
    "GET",
    "/_ping",
    async (req, res, ctx) => {
      await sleep(200);
      ctx.next();
    },
    { times: 1 },
  );
  const client = new DockerSandboxClient({ host: fake.host });
  const sandboxes = await Promise.all(Array.from({ length: 10 }, (_, i) => client.resumeSandbox({ id: `q${i}` })));
  assert.equal(sandboxes.length, 10);
  assert.equal(fake.seen("GET", "/_ping").length, 1);
});

test("aborts at random moments across an exec's life: no crash, each settles once", { timeout: HANG_MS }, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  // Slow every step a little so aborts land inside each of them.
  const slow = (ms) => async (req, res, ctx) => {
    await sleep(Math.random() * ms);
    return ctx.next();
  };
  const undo = [];
  undo.push(fake.route("POST", "/containers/:name/exec", slow(6)));
  undo.push(fake.route("GET", "/exec/:id/json", slow(6)));
  undo.push(fake.route(
    "POST",
    "/exec/:id/start",
    notKiller(async (req, res, ctx) => {
      ctx.conn.hijack();
      await res.write(upgradeHead());
      await sleep(Math.random() * 6);
      await res.write(frame(1, "a"));
      await sleep(Math.random() * 6);
      await res.write(frame(2, "b"));
      ctx.exec.Running = false;
      ctx.exec.ExitCode = 0;
      res.end();
    }),
  ));
  // The aborts land at random within the time an exec takes on this machine (measured
  // here first, and widened should none complete): across its whole life, however slow.
  let window = 0;
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    assert.equal((await runtime.exec({ command: "x" })).exitCode, 0);
    window = Math.max(window, performance.now() - started);
  }
  window *= 1.25;
  let aborted = 0;
  let completed = 0;
  for (let i = 0; i < 150 || aborted === 0 || completed === 0; i++) {
    if (i >= 150 && i % 50 === 0) window = completed === 0 ? window * 2 : window / 2;
    const controller = new AbortController();
    const reason = new Error("random abort");
    const timer = setTimeout(() => controller.abort(reason), Math.random() * window);
    try {
      const r = await runtime.exec({ command: "x", abortSignal: controller.signal });
      assert.equal(r.exitCode, 0);
      completed++;
    } catch (e) {
      assert.equal(e, reason, e?.message);
      aborted++;
    }
    clearTimeout(timer);
  }
  assert.ok(aborted > 0 && completed > 0, `aborted ${aborted}, completed ${completed}`);
  t.diagnostic(`aborted ${aborted}, completed ${completed}, aborts within ${window.toFixed(1)} ms`);
  for (const u of undo) u();
  // The abort only turns a hang into a clear failure, after minutes.
  const r = await runtime.exec({ command: "echo", args: ["still fine"], abortSignal: AbortSignal.timeout(HANG_MS / 2) });
  assert.equal(Buffer.from(r.stdout).toString(), "still fine\n");
});

test("the engine vanishes under 30 operations in flight: every one rejects, none hangs", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/exec/:id/start", notKiller(async (req, res, ctx) => {
    ctx.conn.hijack();
    await res.write(Buffer.concat([upgradeHead(), frameHeader(1, 10), Buffer.from("12345")]));
    res.hang();
  }));
  fake.route("GET", "/containers/:name/archive", { raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", then: "hang" });
  fake.route("PUT", "/containers/:name/archive", { hang: true });
  const ops = [];
  for (let i = 0; i < 10; i++) {
    ops.push(runtime.exec({ command: "yes" }));
    ops.push(runtime.readFile({ path: `f${i}.txt` }));
    ops.push(runtime.writeTextFile({ path: `w${i}.txt`, text: "w" }));
  }
  // Every one in flight at the fake (stuck there), however long they took to get there.
  await until(
    () =>
      fake.seen("POST", /^\/exec\/[^/]+\/start$/).length >= 10 &&
      fake.seen("GET", "/archive").length >= 10 &&
      fake.seen("PUT", "/archive").length >= 10,
  );
  await fake.close();
  const settled = await Promise.allSettled(ops);
  for (const s of settled) {
    assert.equal(s.status, "rejected");
    assert.ok(s.reason instanceof DockerSandboxError, s.reason?.message);
    assert.ok(["docker_command_failed", "docker_unavailable"].includes(s.reason.code), s.reason.message);
  }
});

test("listFiles over garbage command output: a result or a DockerSandboxError, never a crash", { timeout: HANG_MS }, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  let seed = 12345;
  const rand = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
  const alphabet = Buffer.from("/workspace\t\n fdl-0123456789.\\x\u00ff\u0000ab");
  let output = Buffer.alloc(0);
  fake.execProgram = () => ({ stdout: output, exitCode: 0 });
  let ok = 0;
  let failed = 0;
  for (let i = 0; i < 200; i++) {
    const n = Math.floor(rand() * 300);
    output = Buffer.alloc(n);
    for (let k = 0; k < n; k++) output[k] = rand() < 0.8 ? alphabet[Math.floor(rand() * alphabet.length)] : Math.floor(rand() * 256);
    try {
      const list = await runtime.listFiles({ path: "." });
      assert.ok(Array.isArray(list));
      ok++;
    } catch (e) {
      assert.ok(e instanceof DockerSandboxError || e instanceof TypeError, `${e?.name}: ${e?.message}`);
      failed++;
    }
  }
  assert.equal(ok + failed, 200);
});

test("exec inspect answered 404 (the exec vanished)", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("GET", "/exec/:id/json", notKiller({ status: 404, json: { message: "No such exec instance: gone" } }));
  const err = await expectCode(runtime.exec({ command: "echo" }), "docker_command_failed", /No such exec instance: gone/);
  assert.equal(err.details.statusCode, 404);
});

test("replies framed by closing the connection (no Content-Length, no chunks) are read whole", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route(
    "GET",
    "/exec/:id/json",
    notKiller({ raw: 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{"Running":false,"ExitCode":42}', then: "end" }),
  );
  const r = await runtime.exec({ command: "echo" });
  assert.equal(r.exitCode, 42);
});

test("an interim 100 Continue before the real reply", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route(
    "GET",
    "/exec/:id/json",
    notKiller({ raw: 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 31\r\n\r\n{"Running":false,"ExitCode":7}\n' }),
  );
  const r = await runtime.exec({ command: "echo" });
  assert.equal(r.exitCode, 7);
});
