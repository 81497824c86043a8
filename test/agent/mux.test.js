// Multiplexing and flow control: a 64 MiB read in flight does not hold up a PING or a small
// LIST; chatty commands share the output round-robin; a stream without credit stops being
// read, so its command blocks and the agent's memory stays bounded; the agent's RSS idle
// and under a stream.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Agent, HANG, waitFor } from "./lib/agent.js";
import { blockedWriting, cpuTicks } from "./lib/procs.js";
import { tempWorkdir, variants } from "./lib/variants.js";
import { dec, enc, S } from "./lib/wire.js";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const sha = (b) => createHash("sha256").update(b).digest("hex");

// Until every one of `pids` sleeps writing to its stdout (a full pipe: the agent stopped
// reading it). Where /proc/<pid>/syscall cannot be read, until `fallback()` holds.
async function untilBlockedWriting(pids, fallback) {
  if (pids.some((pid) => blockedWriting(pid) === undefined)) return waitFor(fallback);
  return waitFor(() => pids.every((pid) => blockedWriting(pid)));
}

// Whatever a failed test left running ends with the file.
after(() => Agent.killAll());

for (const v of variants()) {
  describe(`mux [${v.name}]`, () => {
    let wd;
    let agent;
    before(async () => {
      wd = tempWorkdir();
      agent = await Agent.start(v, { workdir: wd.dir });
    });
    after(async () => {
      const st = await agent.close();
      assert.equal(st.code, 0, agent.stderr);
      assert.deepEqual(agent.strays, []);
      wd.cleanup();
    });

    test("a large read in flight does not delay a PING or a small LIST", HANG, async (t) => {
      const size = v.native ? 64 * 1024 * 1024 : 16 * 1024 * 1024;
      const data = Buffer.alloc(size);
      for (let i = 0; i < size; i += 4096) data.writeUInt32BE(i, i);
      writeFileSync(join(wd.dir, "big.bin"), data);
      writeFileSync(join(wd.dir, "small.txt"), "x");
      const big = agent.request((id) => enc.read(id, { path: "big.bin", window: 4 * 1024 * 1024 }));
      while (big.bytes[S.OUT] === 0) await big.waitData();
      const t0 = process.hrtime.bigint();
      await agent.ping();
      const pingUs = Number(process.hrtime.bigint() - t0) / 1000;
      const atPong = big.bytes[S.OUT];
      const doneAtPong = big.finished;
      const list = await agent.list("");
      const atList = big.bytes[S.OUT];
      const doneAtList = big.finished;
      await big.done;
      assert.equal(big.error, null);
      assert.equal(doneAtPong, false, "PONG came after the whole read");
      assert.equal(doneAtList, false, "LIST came after the whole read");
      assert.ok(atPong < size && atList < size);
      assert.equal(list.result.count, 2);
      assert.equal(dec.readResult(big.raw).bytes, size);
      assert.equal(sha(big.buffer()), sha(data));
      t.diagnostic(
        `PONG after ${(atPong / 1048576).toFixed(1)} MiB of ${size / 1048576} MiB (${pingUs.toFixed(0)} us), ` +
          `LIST result after ${(atList / 1048576).toFixed(1)} MiB`,
      );
    });

    test("chatty commands share the output; a small command is not held up", HANG, async () => {
      // Chatty commands that never end by themselves: however long the small command takes
      // to start on this machine, they are all still streaming when it runs and ends.
      const chatty = [0, 1, 2].map(() => agent.exec({ argv: ["cat", "/dev/zero"], keep: false }));
      while (chatty.some((c) => c.bytes[S.OUT] === 0)) await Promise.race(chatty.map((c) => c.waitData()));
      const small = await agent.run({ argv: ["echo", "small"] });
      const before = chatty.map((c) => c.finished);
      assert.equal(small.text(), "small\n");
      for (const c of chatty) agent.send(enc.cancel(c.id));
      await Promise.all(chatty.map((c) => c.done));
      assert.ok(!before.includes(true), "the small command waited for a chatty one to end");
      // Every byte each chatty command wrote arrived, in its own stream.
      for (const c of chatty) {
        const res = dec.execResult(c.raw);
        assert.equal(res.cancelled, true);
        assert.equal(c.bytes[S.OUT], res.outBytes);
      }
    });

    test("no credit: the command blocks, nothing is sent, memory stays bounded; credit resumes it exactly", HANG, async (t) => {
      const count = join(wd.dir, "count");
      const script = `n=0; while :; do printf '%01023d\\n' 0; n=$((n+1)); echo $n > ${count}; done`;
      const req = agent.exec({ argv: ["sh", "-c", script], window: 0, autoCredit: false });
      // Twenty more commands writing as fast as they can, also without credit.
      const floods = Array.from({ length: 20 }, () =>
        agent.exec({ argv: ["cat", "/dev/zero"], window: 0, autoCredit: false }),
      );
      const readCount = () => {
        try {
          const s = readFileSync(count, "utf8");
          return s.endsWith("\n") ? Number(s) : -1; // -1: between the truncation and the write
        } catch {
          return -1;
        }
      };
      // Wait until the command and every flood block on their full pipes: the agent stopped
      // reading them (where that cannot be seen, until the command's count is past what a
      // pipe holds).
      await waitFor(() => req.started && floods.every((f) => f.started));
      await untilBlockedWriting([req, ...floods].map((r) => r.started.pid), () => readCount() >= 64);
      // Blocked, it makes no progress however long it is left (a slow machine only shortens
      // the look).
      const c1 = readCount();
      await sleep(300);
      const c2 = readCount();
      assert.equal(req.bytes[S.OUT], 0, "DATA without credit");
      for (const f of floods) assert.equal(f.bytes[S.OUT], 0);
      assert.equal(c1, c2, "the command kept writing");
      assert.ok(c2 <= 80, `the command wrote ${c2} KiB: more than a pipe holds`);
      const rss = agent.rssKb();
      if (v.native) assert.ok(rss < 8 * 1024, `agent RSS ${rss} KiB with 21 blocked streams`);
      // Credit for 10000 bytes: exactly that much arrives, then nothing more.
      agent.send(enc.window(req.id, S.OUT, 10000));
      while (req.bytes[S.OUT] < 10000) await req.waitData();
      await sleep(200);
      assert.equal(req.bytes[S.OUT], 10000);
      for (const f of floods) agent.send(enc.cancel(f.id));
      agent.send(enc.cancel(req.id));
      await Promise.all([req.done, ...floods.map((f) => f.done)]);
      const res = dec.execResult(req.raw);
      assert.equal(res.cancelled, true);
      assert.equal(res.outBytes, 10000);
      t.diagnostic(`blocked after ${c2} KiB; agent RSS ${rss} KiB with 21 streams blocked`);
    });

    test("a host that stops reading: the agent waits without spinning, the command blocks", HANG, async () => {
      const req = agent.exec({ argv: ["cat", "/dev/zero"], window: 64 * 1024 * 1024, autoCredit: false });
      while (req.bytes[S.OUT] === 0) await req.waitData();
      agent.child.stdout.pause();
      // The agent's queue is full once it stops reading the command: cat then blocks on its
      // pipe. From there on the agent has nothing to do but wait for its stdout.
      await sleep(300);
      await untilBlockedWriting([req.started.pid], () => true);
      const c0 = cpuTicks(agent.pid);
      await sleep(500);
      const used = cpuTicks(agent.pid) - c0;
      agent.child.stdout.resume();
      const before = req.bytes[S.OUT];
      while (req.bytes[S.OUT] < before + 1024 * 1024) await req.waitData();
      agent.send(enc.cancel(req.id));
      await req.done;
      assert.ok(used <= 10, `the agent used ${used * 10} ms of CPU in 500 ms while the host did not read`);
    });

    test("a LIST with less credit than one record waits without spinning", HANG, async () => {
      writeFileSync(join(wd.dir, "a-long-enough-name-for-one-record"), "");
      const req = agent.request((id) => enc.list(id, { path: "", window: 10 }), { autoCredit: false });
      // Two PINGs answered after it: the agent took the LIST (frames are handled in order),
      // found the credit short, and went round its loop again since.
      assert.ok(await agent.ping());
      assert.ok(await agent.ping());
      const c0 = cpuTicks(agent.pid);
      await sleep(400);
      const used = cpuTicks(agent.pid) - c0;
      assert.equal(req.bytes[S.OUT], 0);
      assert.equal(req.finished, false);
      assert.ok(used <= 8, `the agent used ${used * 10} ms of CPU in 400 ms`);
      agent.send(enc.window(req.id, S.OUT, 1 << 20));
      await req.done;
      assert.ok(dec.listResult(req.raw).count >= 1);
    });

    test("RSS idle and under a stream", HANG, async (t) => {
      const idle = agent.rssKb();
      const req = agent.exec({ argv: ["cat", "/dev/zero"], window: 4 * 1024 * 1024 });
      // The RSS is sampled at every MiB of a stream of 16 MiB (four windows), however long
      // that takes here: the highest sample counts.
      const total = 16 * 1024 * 1024;
      const t0 = performance.now();
      let streaming = 0;
      for (let next = 1 << 20; req.bytes[S.OUT] < total && !req.finished; ) {
        await req.waitData();
        if (req.bytes[S.OUT] >= next) {
          streaming = Math.max(streaming, agent.rssKb() ?? 0);
          next += 1 << 20;
        }
      }
      const secs = (performance.now() - t0) / 1000;
      const bytes = req.bytes[S.OUT];
      agent.send(enc.cancel(req.id));
      await req.done;
      assert.ok(bytes >= total, `the stream ended after ${bytes} bytes`);
      if (v.native) assert.ok(streaming < 16 * 1024, `RSS ${streaming} KiB while streaming`);
      t.diagnostic(`RSS idle ${idle} KiB, streaming ${streaming} KiB (${(bytes / 1048576 / secs).toFixed(0)} MiB/s)`);
    });
  });
}
