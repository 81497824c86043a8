// PORT_WAIT: a listening TCP port on IPv4 or IPv6 is found by /proc/net/tcp(6); a port
// nobody listens on times out after the requested time; a port that starts listening while
// the agent polls is found; CANCEL stops a wait.
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { after, before, describe, test } from "node:test";
import { Agent } from "./lib/agent.js";
import { tempWorkdir, variants } from "./lib/variants.js";
import { dec, enc } from "./lib/wire.js";

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

    test("a listening IPv4 port is found at once", async () => {
      const s = await listen("127.0.0.1");
      try {
        const r = await agent.portWait(s.address().port, { timeoutMs: 5000 });
        assert.equal(r.result.found, 1);
        assert.equal(r.result.families & 1, 1);
        assert.ok(r.result.waitedMs < 1000);
        const only6 = await agent.portWait(s.address().port, { flags: 2 });
        assert.equal(only6.result.found, 0, "IPv4 listener reported for IPv6 only");
      } finally {
        s.close();
      }
    });

    test("a listening IPv6 port is found", async (t) => {
      let s;
      try {
        s = await listen("::1");
      } catch {
        t.skip("no IPv6 loopback");
        return;
      }
      try {
        const r = await agent.portWait(s.address().port, { timeoutMs: 5000 });
        assert.equal(r.result.found, 1);
        assert.equal(r.result.families, 2);
      } finally {
        s.close();
      }
    });

    test("nobody listening: timed out after the requested time; timeout 0 checks once", async () => {
      const port = await unusedPort();
      const t0 = Date.now();
      let r = await agent.portWait(port, { timeoutMs: 300, intervalMs: 50 });
      const took = Date.now() - t0;
      assert.equal(r.result.found, 0);
      assert.ok(took >= 280 && took < 3000, `took ${took}`);
      assert.ok(r.result.waitedMs >= 280);
      r = await agent.portWait(port);
      assert.equal(r.result.found, 0);
    });

    test("a port that starts listening while the agent polls", async () => {
      const port = await unusedPort();
      const waiting = agent.portWait(port, { timeoutMs: 5000, intervalMs: 20 });
      await new Promise((r) => setTimeout(r, 200));
      const s = await listen("127.0.0.1", port);
      try {
        const r = await waiting;
        assert.equal(r.result.found, 1);
        assert.ok(r.result.waitedMs >= 150);
      } finally {
        s.close();
      }
    });

    test("CANCEL stops a wait; bad requests are typed errors", async () => {
      const port = await unusedPort();
      const req = agent.request((id) => enc.portWait(id, { port, timeoutMs: 10000 }));
      await new Promise((r) => setTimeout(r, 50));
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
