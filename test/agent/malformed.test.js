// Malformed input from the host: the agent answers with a typed error for the request or,
// when the framing itself is broken, with a connection ERROR and a clean exit (code 3):
// never a crash, never a sanitizer report (the asan variant), never a hang.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Agent, HANG } from "./lib/agent.js";
import { tempWorkdir, variants } from "./lib/variants.js";
import { enc, frame, header, IN_WINDOW, S, T } from "./lib/wire.js";

let seed = 12345;
function rnd(n) {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed % n;
}
function garbage(maxLen) {
  const len = rnd(maxLen);
  const b = Buffer.alloc(len);
  for (let i = 0; i < len; i++) b[i] = rnd(8) ? rnd(8) : rnd(256);
  return b;
}

// A fatal framing error: one connection-level ERROR, exit code 3, no signal.
async function expectFatal(agent, bytes, kind = "protocol") {
  agent.send(bytes);
  // A hang is caught by the test's own timeout, not by a timer racing the exit.
  const st = await agent.exit;
  assert.equal(st.signal, null, `killed by ${st.signal}: ${agent.stderr}`);
  assert.equal(st.code, 3, agent.stderr);
  assert.equal(agent.connErrors.length, 1);
  assert.equal(agent.connErrors[0].kind, kind);
  agent.checkClean();
}

// Whatever a failed test left running ends with the file.
after(() => Agent.killAll());

for (const v of variants()) {
  describe(`malformed [${v.name}]`, () => {
    let wd;
    before(() => {
      wd = tempWorkdir();
    }, HANG);
    after(() => wd.cleanup());
    const start = (opts = {}) => Agent.start(v, { workdir: wd.dir, ...opts });

    test("framing errors end the connection cleanly", HANG, async () => {
      await expectFatal(await start(), header(2 * 1024 * 1024, T.EXEC, { id: 1 }));
      await expectFatal(await start(), header(0xffffffff, T.DATA, { id: 1, stream: S.IN }));
      await expectFatal(await start(), header(70000, T.DATA, { id: 1, stream: S.IN }));
      await expectFatal(await start(), header(0, T.PING, { id: 1, reserved: 1 }));
      await expectFatal(await start(), header(0, 0x7f, { id: 1 }));
      await expectFatal(await start(), header(0, T.RESULT, { id: 1 }));
      await expectFatal(await start(), header(0, T.EXEC, { id: 0 }));
      await expectFatal(await start(), header(0, T.EXEC, { id: 1, flags: 1 }));
      await expectFatal(await start(), header(0, T.DATA, { id: 1, stream: S.OUT }));
      await expectFatal(await start(), enc.hostHello());
      await expectFatal(await start(), frame(T.PING, 0, Buffer.alloc(65)));
    });

    test("the first frame must be a HOST_HELLO with a common version", HANG, async () => {
      await expectFatal(await start({ hostHello: false }), enc.ping(1));
      await expectFatal(await start({ hostHello: false }), enc.hostHello(2, 3), "version");
      await expectFatal(await start({ hostHello: false }), enc.hostHello(1, 1, 7));
      await expectFatal(await start({ hostHello: false }), frame(T.HOST_HELLO, 0, Buffer.from([0, 1])));
      // A range that includes version 1 is accepted.
      const a = await start({ hostHello: false });
      a.send(enc.hostHello(1, 9));
      assert.ok(await a.ping());
      assert.equal((await a.close()).code, 0);
    });

    test("end of input inside a frame: a clean exit", HANG, async () => {
      const a = await start();
      a.send(enc.exec(1, { argv: ["true"] }).subarray(0, 20));
      const st = await a.close();
      assert.equal(st.code, 0);
    });

    test("every truncation of every request: a typed error each, the agent goes on", HANG, async () => {
      const a = await start();
      const valid = [
        (id) => enc.exec(id, { argv: ["true"], env: ["A=b"], cwd: "/" }),
        (id) => enc.read(id, { path: "x" }),
        (id) => enc.write(id, { path: "x", length: 1 }),
        (id) => enc.mkdir(id, { path: "x" }),
        (id) => enc.list(id, { path: "" }),
        (id) => enc.portWait(id, { port: 1 }),
        (id) => enc.signal(id, { pgid: 0, signal: 15 }),
        (id) => enc.groupAlive(id, { pgid: 0 }),
      ];
      let count = 0;
      for (const make of valid) {
        const full = make(1);
        const payload = full.subarray(12);
        for (let cut = 0; cut < payload.length; cut++) {
          const r = a.request((id) => frame(full[4], id, payload.subarray(0, cut)));
          await r.done;
          assert.ok(r.error, `${full[4]} cut at ${cut}: ${r.raw ? "accepted" : "no answer"}`);
          assert.ok(["protocol", "invalid", "limit"].includes(r.error.kind), r.error.kind);
          count++;
        }
        // one trailing byte too many
        const r = a.request((id) => frame(full[4], id, Buffer.concat([payload, Buffer.from([0])])));
        await r.done;
        assert.equal(r.error?.kind, "protocol");
      }
      assert.ok(count > 100);
      assert.ok(await a.ping());
      assert.equal((await a.close()).code, 0);
    });

    test("random payloads for every harmless request type", HANG, async () => {
      const a = await start();
      const types = [T.READ, T.WRITE, T.MKDIR, T.LIST, T.PORT_WAIT, T.GROUP_ALIVE, T.CANCEL, T.PING];
      const pending = [];
      for (let i = 0; i < 600; i++) {
        const type = types[rnd(types.length)];
        const payload = garbage(48);
        if (type === T.PING) {
          a.send(frame(T.PING, 1000000 + i, payload.subarray(0, 64)));
          continue;
        }
        if (type === T.CANCEL) {
          a.send(frame(T.CANCEL, 5000000 + i, payload.subarray(0, rnd(2))));
          continue;
        }
        pending.push(a.request((id) => frame(type, id, payload)));
      }
      // DATA and WINDOW for ids nobody uses are ignored
      a.send(enc.data(777777, "x"));
      a.send(enc.window(777777, S.OUT, 5));
      // Answered after every request above was taken (frames are handled in order): what
      // has not ended by itself by then is waiting, and is cancelled.
      assert.ok(await a.ping());
      for (const r of pending) if (!r.finished) a.send(enc.cancel(r.id));
      await Promise.all(pending.map((r) => r.done));
      for (const r of pending) assert.ok(r.error || r.raw);
      assert.ok(await a.ping());
      a.strays = a.strays.filter((f) => f.type !== T.PONG);
      assert.equal((await a.close()).code, 0);
    });

    test("flow control violations are errors of the request", HANG, async () => {
      const a = await start();
      // DATA over the credit: a command that does not read its stdin gets a pipe's worth, the
      // agent holds the window's worth; more than that was never granted. (The commands
      // below never end by themselves before the agent has had every frame.)
      let r = a.exec({ argv: ["sleep", "1000"], stdin: "stream" });
      for (let off = 0; off < 2 * IN_WINDOW; off += 65536) a.send(enc.data(r.id, Buffer.alloc(65536)));
      await r.done;
      assert.equal(r.error.kind, "flow_control");
      // The agent returns credit as it consumes: a WRITE's data goes to the file at once.
      r = a.request((id) => enc.write(id, { path: "f", length: IN_WINDOW }));
      await r.sendInput(Buffer.alloc(IN_WINDOW));
      await r.done;
      assert.equal(r.error, null);
      // credit overflow
      r = a.exec({ argv: ["sleep", "1000"], window: 0x7fff0000, autoCredit: false });
      a.send(enc.window(r.id, S.OUT, 0x7fff0000));
      await r.done;
      assert.equal(r.error.kind, "flow_control");
      // WINDOW for a stream the request does not have, DATA to a request without input
      r = a.request((id) => enc.read(id, { path: "f", window: 0 }));
      assert.ok(await a.ping()); // the READ is in flight, waiting for credit
      a.send(enc.window(r.id, S.ERR, 10));
      await r.done;
      assert.equal(r.error.kind, "protocol");
      r = a.exec({ argv: ["sleep", "1000"] });
      a.send(enc.data(r.id, "x"));
      await r.done;
      assert.equal(r.error.kind, "protocol");
      // DATA after END
      r = a.request((id) => enc.write(id, { path: "g", length: 1 }));
      a.send(enc.data(r.id, "", false));
      a.send(enc.data(r.id, "x", true));
      await r.done;
      assert.equal(r.raw !== null, true, "the write itself completes");
      // PING over 64 bytes
      r = a.request((id) => enc.ping(id, Buffer.alloc(65)));
      await r.done;
      assert.equal(r.error.kind, "limit");
      // Whatever the requests above still sent came before this PONG.
      assert.ok(await a.ping());
      a.strays = [];
      assert.equal((await a.close()).code, 0);
    });

    test("requests in flight are bounded", HANG, async () => {
      const a = await start();
      // Waits that only a cancellation can end: the longest timeout and poll interval the
      // protocol takes (a day), so however slow the machine, none ends on its own first.
      const DAY = 86_400_000;
      const waits = [];
      for (let i = 0; i < 1025; i++) waits.push(a.request((id) => enc.portWait(id, { port: 1, timeoutMs: DAY, intervalMs: DAY })));
      const over = waits.at(-1);
      await over.done;
      assert.equal(over.error.kind, "limit");
      assert.equal(over.error.value, 1024n);
      for (const w of waits.slice(0, -1)) a.send(enc.cancel(w.id));
      await Promise.all(waits.map((w) => w.done));
      for (const w of waits.slice(0, -1)) assert.equal(w.error.kind, "cancelled");
      assert.equal((await a.close()).code, 0);
    });

    test("descriptor exhaustion: errors of the requests, and the agent goes on", HANG, async (t) => {
      const a = await start({ prefix: ["prlimit", "--nofile=40", "--"] });
      writeFileSync(join(wd.dir, "f"), "x");
      const reads = [];
      for (let i = 0; i < 60; i++) reads.push(a.request((id) => enc.read(id, { path: "f", window: 0 }), { autoCredit: false }));
      const ex = await a.run({ argv: ["true"] });
      const list = await a.list("");
      // A READ fails when it is taken, and the agent's frames leave in the order they are
      // made: every failure came before the PONG.
      assert.ok(await a.ping());
      const failed = reads.filter((r) => r.finished);
      assert.ok(failed.length > 0 && failed.length < 60, `${failed.length} of 60 reads failed`);
      for (const r of failed) {
        assert.equal(r.error.kind, "resources");
        assert.equal(r.error.errno, 24); // EMFILE
      }
      assert.equal(ex.error?.kind, "resources");
      // A listing needs one descriptor: it may find the one a failed read gave back.
      assert.ok(list.error === null || list.error.kind === "resources", list.error?.kind);
      for (const r of reads) if (!r.finished) a.send(enc.cancel(r.id));
      await Promise.all(reads.map((r) => r.done));
      const ok = await a.run({ argv: ["echo", "again"] });
      assert.equal(ok.text(), "again\n");
      assert.equal((await a.close()).code, 0);
      t.diagnostic(`${60 - failed.length} reads held a descriptor, ${failed.length} got EMFILE`);
    });

    test("a stream of random bytes: a clean exit, never a crash", HANG, async () => {
      for (let i = 0; i < 5; i++) {
        const a = await start();
        for (let k = 0; k < 20; k++) a.send(garbage(4000));
        a.child.stdin.end();
        // A hang is caught by the test's own timeout, not by a timer racing the exit.
        const st = await a.exit;
        assert.equal(st.signal, null, a.stderr);
        assert.ok(st.code === 0 || st.code === 3, `exit ${st.code}: ${a.stderr}`);
        a.checkClean();
      }
    });
  });
}
