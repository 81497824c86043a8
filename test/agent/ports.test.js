// PORT_WAIT: a listening TCP port on IPv4 or IPv6 is found by /proc/net/tcp(6); a port
// nobody listens on times out after the requested time; a port that starts listening while
// the agent polls is found; CANCEL stops a wait.
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { after, before, describe, test } from "node:test";
import { Agent, HANG } from "./lib/agent.js";
import { tempWorkdir, variants } from "./lib/variants.js";
import { dec, enc } from "./lib/wire.js";

// The longest timeout and poll interval a PORT_WAIT takes: a wait with either cannot end by
// itself before anything a test waits for, however slow the machine.
const DAY = 86_400_000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function listen(host, port = 0) {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen({ host, port, exclusive: true }, () => resolve(s));
  });
}

async function unusedPort() {
  const s = await listen("127.0.0.1");
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

// Whatever a failed test left running ends with the file.
after(() => Agent.killAll());

for (const v of variants()) {
  describe(`ports [${v.name}]`, () => {
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

    test("a listening IPv4 port is found at once", HANG, async () => {
      const s = await listen("127.0.0.1");
      try {
        // Past the agent's 5 ms snapshot of the tables, should an earlier wait have taken one.
        await sleep(10);
        // Polled a day apart: found by the first look, or a day later.
        const r = await agent.portWait(s.address().port, { timeoutMs: DAY, intervalMs: DAY });
        assert.equal(r.result.found, 1);
        assert.equal(r.result.families & 1, 1);
        assert.ok(r.result.waitedMs < DAY);
        const only6 = await agent.portWait(s.address().port, { flags: 2 });
        assert.equal(only6.result.found, 0, "IPv4 listener reported for IPv6 only");
      } finally {
        s.close();
      }
    });

    test("a listening IPv6 port is found", HANG, async (t) => {
      let s;
      try {
        s = await listen("::1");
      } catch {
        t.skip("no IPv6 loopback");
        return;
      }
      try {
        const r = await agent.portWait(s.address().port, { timeoutMs: DAY });
        assert.equal(r.result.found, 1);
        assert.equal(r.result.families, 2);
      } finally {
        s.close();
      }
    });

    test("nobody listening: timed out after the requested time; timeout 0 checks once", HANG, async () => {
      const port = await unusedPort();
      const t0 = Date.now();
      const short = agent.request((id) => enc.portWait(id, { port, timeoutMs: 300, intervalMs: 50 }));
      // Not long after: before a wait of ten times as long, sent just after it, on the same
      // agent. The agent answers waits by their deadlines (and in the order they came when
      // several are due at once), so a busy machine delays both alike.
      const control = agent.request((id) => enc.portWait(id, { port, timeoutMs: 3000, intervalMs: 50 }));
      await short.done;
      const took = Date.now() - t0;
      let r = short;
      r.result = dec.portResult(r.raw);
      assert.equal(r.result.found, 0);
      assert.ok(took >= 280, `took ${took}`);
      assert.ok(!control.finished || control.finishSeq > short.finishSeq, "a wait ten times as long ended first");
      agent.send(enc.cancel(control.id));
      await control.done;
      assert.ok(control.error?.kind === "cancelled" || dec.portResult(control.raw).found === 0);
      assert.ok(r.result.waitedMs >= 280);
      r = await agent.portWait(port);
      assert.equal(r.result.found, 0);
    });

    test("a port that starts listening while the agent polls", HANG, async () => {
      const port = await unusedPort();
      const waiting = agent.request((id) => enc.portWait(id, { port, timeoutMs: DAY, intervalMs: 20 }));
      // The PONG comes after the wait's first look (frames are handled in order): the port
      // was not found then, and the wait is polling.
      assert.ok(await agent.ping());
      const polling = performance.now();
      assert.equal(waiting.finished, false, "found before anything listened");
      await sleep(200);
      const s = await listen("127.0.0.1", port);
      const listening = performance.now();
      try {
        const r = await waiting.done;
        r.result = dec.portResult(r.raw);
        assert.equal(r.result.found, 1);
        // The wait began before the PONG and found the port after the listen: it waited at
        // least as long as that (whole milliseconds on the agent's clock).
        assert.ok(r.result.waitedMs >= Math.floor(listening - polling) - 1, `waited ${r.result.waitedMs} ms`);
        assert.ok(r.result.waitedMs >= 150);
      } finally {
        s.close();
      }
    });

    test("CANCEL stops a wait; bad requests are typed errors", HANG, async () => {
      const port = await unusedPort();
      const req = agent.request((id) => enc.portWait(id, { port, timeoutMs: DAY }));
      // The wait is in progress once a PING sent after it is answered.
      assert.ok(await agent.ping());
      assert.equal(req.finished, false);
      agent.send(enc.cancel(req.id));
      await req.done;
      assert.equal(req.error.kind, "cancelled");
      assert.equal((await agent.portWait(0)).error.kind, "invalid");
      assert.equal((await agent.portWait(80, { intervalMs: 1, timeoutMs: 100 })).error.kind, "invalid");
      assert.equal((await agent.portWait(80, { timeoutMs: 86400001 })).error.kind, "limit");
      assert.equal(dec.portResult(Buffer.from([1, 1, 0, 0, 0, 0, 0, 0])).found, 1);
    });
  });
}
