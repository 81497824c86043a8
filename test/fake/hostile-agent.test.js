// A hostile agent behind the fake engine (issue 23, test/helpers/hostile-agent.js): the
// real addon places and talks to a JS agent that lies on purpose, and each attack must end
// with a typed error while the host's memory stays bounded.
//  - listFiles answered with endless records (within the credit the host grants): the
//    host refuses the 100001st entry, or a listing past 32 MiB of paths, fails the call
//    and ends the connection (the next call starts a new agent);
//  - a listing RESULT whose count is not what was sent, a reply for another request id;
//  - a reply that never comes: the caller's abort ends the call.
// Memory: process.memoryUsage().rss sampled before and during each attack (each sample
// taken as the attack goes, by bytes sent or taken: never by time); the bound asserted
// is generous (64 MiB) while each attack offers 1 GiB.
import test from "node:test";
import assert from "node:assert/strict";
import { HANG_MS, startFakeEngine, DockerSandboxClient, expectCode, mib } from "../helpers/fake-engine.js";
import { serveHostileAgent, fakeAgentDir, agentEnc, memory, MAX_DATA } from "../helpers/hostile-agent.js";

const T = { timeout: HANG_MS };
const GiB = 1024 * 1024 * 1024;
const BOUND = 64 * 1024 * 1024; // growth allowed during an attack

fakeAgentDir({ after: test.after });

let seq = 0;
async function hostileSandbox(t, handlers, options) {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  const id = `hostile${seq++}`;
  fake.addContainer(id, { running: true });
  const served = serveHostileAgent(fake, handlers, options);
  const client = new DockerSandboxClient({ host: fake.host, transport: "agent" });
  const sandbox = await client.resumeSandbox({ id });
  return { fake, served, sandbox, runtime: sandbox.runtime };
}

// Growth of the host's memory over `base`, tracked as the attack goes.
function tracker() {
  const base = memory();
  const t = {
    base,
    maxRss: 0,
    maxExternal: 0,
    sample() {
      const m = memory();
      t.maxRss = Math.max(t.maxRss, m.rss - base.rss);
      t.maxExternal = Math.max(t.maxExternal, m.external - base.external);
      return t.maxRss > BOUND || t.maxExternal > BOUND;
    },
    report(what) {
      console.log(`${what}: rss +${mib(t.maxRss).toFixed(1)} MiB, external +${mib(t.maxExternal).toFixed(1)} MiB (base rss ${mib(base.rss).toFixed(1)} MiB)`);
    },
  };
  return t;
}

// An agent whose first listing never ends: whole records within the credit granted, up to
// `budget` bytes; a later agent (after the host ended the first) answers honestly.
function endlessListing({ budget = GiB, name = (i) => `f${i}`, attack }) {
  const st = { sent: 0, records: 0, stopped: null, resultSent: false };
  const handlers = {
    list: async (agent, req) => {
      if (agent !== attack.first) {
        await agent.send(Buffer.concat([agentEnc.data(req.id, agentEnc.entry("honest")), agentEnc.listResult(req.id, 1)]));
        return;
      }
      let sinceSample = 0;
      while (st.sent < budget) {
        // Whole records written in place into one frame (little garbage in this process,
        // whose memory is the host's too).
        const buf = Buffer.allocUnsafe(12 + MAX_DATA);
        let len = 0;
        let count = 0;
        for (;;) {
          const nm = Buffer.from(name(st.records + count));
          if (len + 24 + nm.length > MAX_DATA) break;
          const o = 12 + len;
          buf.fill(0, o, o + 24);
          buf[o] = 1;
          buf.writeUInt16BE(nm.length, o + 2);
          buf.writeUInt32BE(0o644, o + 4);
          nm.copy(buf, o + 24);
          len += 24 + nm.length;
          count++;
        }
        const frame = buf.subarray(0, 12 + len);
        frame.writeUInt32BE(len, 0);
        frame[4] = 0x07;
        frame[5] = 0;
        frame[6] = 2;
        frame[7] = 0;
        frame.writeUInt32BE(req.id, 8);
        if (!(await agent.waitCredit(req.id, len))) {
          st.stopped = "closed";
          return;
        }
        agent.spend(req.id, len);
        if (!(await agent.send(frame))) {
          st.stopped = "closed";
          return;
        }
        st.sent += len;
        st.records += count;
        sinceSample += len;
        if (sinceSample >= 1 << 20) {
          sinceSample = 0;
          if (attack.track.sample()) {
            st.stopped = "host memory over the bound";
            break;
          }
        }
      }
      // The budget spent (only when the host took it all): a result, as if that were all.
      st.resultSent = true;
      await agent.send(agentEnc.listResult(req.id, Math.min(st.records, 1048576)));
    },
  };
  return { st, handlers };
}

async function warmUp(runtime, served) {
  // The connection is made (and the addon's code paged in) before memory is measured.
  const first = served.next();
  const warm = runtime.listFiles({ path: "warm" }).catch(() => {});
  const agent = await first;
  return { agent, warm };
}

test("an endless listing: the 100001st entry fails the call and ends the agent's connection; memory stays bounded", T, async (t) => {
  const attack = {};
  const { st, handlers } = endlessListing({ attack });
  const { served, runtime } = await hostileSandbox(t, {
    list: (agent, req) => {
      if (req.path === "warm") return agent.send(agentEnc.listResult(req.id, 0));
      return handlers.list(agent, req);
    },
  });
  const { agent, warm } = await warmUp(runtime, served);
  await warm;
  attack.first = agent;
  attack.track = tracker();
  const err = await expectCode(runtime.listFiles({ path: "." }), "docker_command_failed", /sandbox agent sent more listing entries than the 100000 asked for/);
  attack.track.sample();
  attack.track.report(`endless listing (${st.records} records, ${mib(st.sent).toFixed(1)} MiB sent)`);
  assert.equal(err.details?.maxEntries, 100000);
  assert.equal(st.resultSent, false, `the host took the whole attack (${st.stopped ?? "budget spent"})`);
  await new Promise((resolve) => (agent.closed ? resolve() : agent.once("closed", resolve)));
  // At most the credit in flight (the listing's 256 KiB window, and a frame) past the bound.
  assert.ok(st.records <= 100000 + Math.ceil((256 * 1024 + MAX_DATA) / 24), `records sent: ${st.records}`);
  assert.ok(attack.track.maxRss < BOUND, `rss grew by ${mib(attack.track.maxRss)} MiB`);
  // The connection was ended as a protocol violation: the next call has a new agent.
  const second = served.next();
  const list = await runtime.listFiles({ path: "." });
  assert.notEqual(await second, agent);
  assert.deepEqual(list.map((e) => e.path), ["honest"]);
});

test("a listing of long paths: past 32 MiB kept the call fails, long before 100000 entries", T, async (t) => {
  const attack = {};
  // Names of 255 bytes that are not UTF-8 (each decodes to 3 bytes), under a 4000-byte path.
  const { st, handlers } = endlessListing({ attack, name: (i) => Buffer.concat([Buffer.from(String(i).padStart(8, "0")), Buffer.alloc(247, 0xff)]) });
  const deep = Array.from({ length: 16 }, (_, i) => `${String(i).padStart(2, "0")}${"d".repeat(248)}`).join("/");
  const { served, runtime } = await hostileSandbox(t, {
    list: (agent, req) => (req.path === "warm" ? agent.send(agentEnc.listResult(req.id, 0)) : handlers.list(agent, req)),
  });
  const { agent, warm } = await warmUp(runtime, served);
  await warm;
  attack.first = agent;
  attack.track = tracker();
  await expectCode(runtime.listFiles({ path: deep }), "docker_command_failed", /sandbox agent sent a listing larger than the 32 MiB a listing may hold/);
  attack.track.sample();
  attack.track.report(`long-path listing (${st.records} records, ${mib(st.sent).toFixed(1)} MiB sent)`);
  assert.equal(st.resultSent, false, `the host took the whole attack (${st.stopped ?? "budget spent"})`);
  assert.ok(st.records < 100000 / 4, `records sent: ${st.records}`);
  assert.ok(attack.track.maxRss < BOUND, `rss grew by ${mib(attack.track.maxRss)} MiB`);
});

test("a listing result that does not count what was sent, and a reply for another request id, end the connection", T, async (t) => {
  let n = 0;
  const { served, runtime } = await hostileSandbox(t, {
    list: async (agent, req) => {
      n++;
      if (n === 1) await agent.send(Buffer.concat([agentEnc.data(req.id, agentEnc.entry("a")), agentEnc.listResult(req.id, 5)]));
      else if (n === 2) await agent.send(agentEnc.listResult(req.id + 1000, 0));
      else await agent.send(agentEnc.listResult(req.id, 0));
    },
  });
  const first = served.next();
  await expectCode(runtime.listFiles({ path: "." }), "docker_command_failed", /result does not match the entries it sent/);
  const a1 = await first;
  await new Promise((resolve) => (a1.closed ? resolve() : a1.once("closed", resolve)));
  await expectCode(runtime.listFiles({ path: "." }), "docker_command_failed", /sandbox agent sent a frame for no request/);
  assert.equal(served.agents.length, 2);
  assert.deepEqual(await runtime.listFiles({ path: "." }), []);
  assert.equal(served.agents.length, 3);
});

test("a reply that never comes: the caller's abort ends the call and the agent keeps serving", T, async (t) => {
  let n = 0;
  const { runtime, served } = await hostileSandbox(t, {
    list: async (agent, req) => {
      if (n++ > 0) await agent.send(agentEnc.listResult(req.id, 0));
    },
  });
  const ac = new AbortController();
  const pending = runtime.listFiles({ path: ".", abortSignal: ac.signal });
  const agent = await served.next();
  await new Promise((resolve) => (agent.requests.length ? resolve() : agent.once("request", resolve)));
  ac.abort();
  await assert.rejects(pending, { name: "AbortError" });
  assert.deepEqual(await runtime.listFiles({ path: "." }), []);
  assert.equal(served.agents.length, 1);
});
