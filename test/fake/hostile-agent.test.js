// A hostile agent behind the fake engine (issue 23, test/helpers/hostile-agent.js): the
// real addon places and talks to a JS agent that lies on purpose, and each attack must end
// with a typed error while the host's memory stays bounded.
//  - listFiles answered with endless records (within the credit the host grants): the
//    host refuses the 100001st entry, or a listing past 16 MiB of paths, fails the call
//    and ends the connection (the next call starts a new agent);
//  - a listing RESULT whose count is not what was sent, a reply for another request id;
//  - importTree toward an agent that never reads: with a HELLO offering 2 GiB of credit,
//    the host still queues at most a few MiB (its write queue is bounded, the offer is
//    clamped) and stops taking the source; 24 imports at once hold their own buffers and
//    one write queue, not their credit too; requests piling up past 8 MiB toward it end
//    the connection; an agent that grants more credit than it was sent bytes (gigabytes
//    at once) is a protocol violation, for importTree and writeFile.
//  - and an agent that reads and returns credit as it goes gets a 64 MiB import whole, one
//    that reads but grants nothing a writeFile of its whole HELLO credit (the bounded
//    queue resumes as its writes complete);
//  - a frame header announcing more than 1 MiB: refused on its 12 bytes;
//  - a reply that never comes: the caller's abort ends the call;
//  - an agent whose input never arrives (HELLO, but no PONG for the connect PING): no
//    request is sent to it, and the next call connects again.
// The same kinds of lie from a static liar planted in a real container, with the host's
// RSS measured in a process that runs no double: test/integration/agent-liar.test.js.
// Memory: process.memoryUsage().rss sampled before and during each attack (each sample
// taken as the attack goes, by bytes sent or taken: never by time); the bound asserted
// is generous (64 MiB) while each attack offers 1 GiB.
import test from "node:test";
import assert from "node:assert/strict";
import { setImmediate as turn } from "node:timers/promises";
import { HANG_MS, startFakeEngine, DockerSandboxClient, expectCode, mib } from "../helpers/fake-engine.js";
import { serveHostileAgent, fakeAgentDir, agentEnc, memory, memoryHeld, MAX_DATA, MAX_PAYLOAD } from "../helpers/hostile-agent.js";

const T = { timeout: HANG_MS };
const GiB = 1024 * 1024 * 1024;
// Growth allowed during an attack. Under the sanitizer stage every allocation carries
// redzones, freed memory waits in a 16 MiB quarantine and 1/8 more is shadow: twice.
const BOUND = (process.env.ANVIA_SANDBOX_BUILD === "asan" ? 128 : 64) * 1024 * 1024;
const MAX_WINDOW = 0x7fffffff;

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
      const m = memoryHeld(base, BOUND);
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
          const nm = name(st.records + count); // an ASCII string, or a Buffer
          const n = typeof nm === "string" ? nm.length : nm.length;
          if (len + 24 + n > MAX_DATA) break;
          const o = 12 + len;
          buf.fill(0, o, o + 24);
          buf[o] = 1;
          buf.writeUInt16BE(n, o + 2);
          buf.writeUInt32BE(0o644, o + 4);
          if (typeof nm === "string") buf.write(nm, o + 24, "latin1");
          else nm.copy(buf, o + 24);
          len += 24 + n;
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

// Until the host stops taking the source (3000 turns of the loop without a pull) or has
// taken far more than its bound.
async function untilSourceHeld(st, track) {
  let last = -1;
  let idle = 0;
  while (idle < 3000 && st.taken < 4 * BOUND) {
    await turn();
    track.sample();
    if (st.pulls !== last) {
      last = st.pulls;
      idle = 0;
    } else idle++;
  }
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

test("a listing of long paths: past 16 MiB kept the call fails, long before 100000 entries", T, async (t) => {
  const attack = {};
  // Names of 255 bytes that are not UTF-8 (each decodes to 3 bytes), under a 4000-byte path.
  const nameBuf = Buffer.alloc(255, 0xff);
  const { st, handlers } = endlessListing({
    attack,
    name: (i) => {
      nameBuf.write(String(i).padStart(8, "0"), 0, "latin1");
      return nameBuf;
    },
  });
  const deep = Array.from({ length: 16 }, (_, i) => `${String(i).padStart(2, "0")}${"d".repeat(248)}`).join("/");
  const { served, runtime } = await hostileSandbox(t, {
    list: (agent, req) => (req.path === "warm" ? agent.send(agentEnc.listResult(req.id, 0)) : handlers.list(agent, req)),
  });
  const { agent, warm } = await warmUp(runtime, served);
  await warm;
  attack.first = agent;
  attack.track = tracker();
  await expectCode(runtime.listFiles({ path: deep }), "docker_command_failed", /sandbox agent sent a listing larger than the 16 MiB a listing may hold/);
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

// The header is judged before its payload: a frame announcing 4 GiB (or 1 byte past the
// 1 MiB maximum) ends the connection as soon as its 12 bytes arrive, with nothing of it
// allocated or awaited; the next call starts a new agent.
test("a frame header announcing more than the protocol's 1 MiB fails the call at once and ends the connection", T, async (t) => {
  const sizes = [0xffffffff, MAX_PAYLOAD + 1];
  let n = 0;
  const { served, runtime } = await hostileSandbox(t, {
    list: async (agent, req) => {
      const size = sizes[n++];
      if (size !== undefined) await agent.send(agentEnc.dataHeader(req.id, size, 4096));
      else await agent.send(agentEnc.listResult(req.id, 0));
    },
  });
  for (const size of sizes) {
    const track = tracker();
    await expectCode(runtime.listFiles({ path: "." }), "docker_command_failed", /frame larger than the maximum/);
    track.sample();
    track.report(`a header announcing ${size} bytes`);
    assert.ok(track.maxRss < BOUND, `rss grew by ${mib(track.maxRss)} MiB`);
    const agent = served.agents.at(-1);
    await new Promise((resolve) => (agent.closed ? resolve() : agent.once("closed", resolve)));
  }
  assert.deepEqual(await runtime.listFiles({ path: "." }), []);
  assert.equal(served.agents.length, sizes.length + 1);
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

test("an agent whose input never arrives (its HELLO comes, the connect PING's PONG never does): no request goes to it, the call fails before, the next call connects again", T, async (t) => {
  // What an engine under load was seen to do (Podman 4.3): the exec's output flows, its
  // input never arrives. The host waits for the PONG of the PING it sent with HOST_HELLO
  // (15 s at most) before any request is routed to the agent.
  const options = { answerPings: false };
  const { runtime, served } = await hostileSandbox(t, { list: (agent, req) => agent.send(agentEnc.listResult(req.id, 0)) }, options);
  await expectCode(runtime.listFiles({ path: "." }), "docker_unavailable", /The sandbox agent's input did not arrive within 15000 ms/);
  assert.equal(served.agents.length, 1);
  assert.deepEqual(served.agents[0].requests, [], "no request was sent to an agent whose input is not known to arrive");
  options.answerPings = true; // the next agent's input arrives: it is not refused for good
  assert.deepEqual(await runtime.listFiles({ path: "." }), []);
  assert.equal(served.agents.length, 2);
});

// An import source of `total` bytes in files of 8 MiB (under maxFileBytes), taken a MiB
// at a time; st.taken says how much the host pulled, and each pull samples memory.
function bigSource(total, track, st, chunkBytes = 1 << 20) {
  const chunk = Buffer.alloc(chunkBytes, 0x61);
  const FILE = 8 << 20;
  const entries = [];
  for (let i = 0; i * FILE < total; i++) {
    entries.push({
      kind: "file",
      path: `big/${i}.bin`,
      byteLength: FILE,
      async *open() {
        for (let off = 0; off < FILE; off += chunk.length) {
          st.taken += chunk.length;
          st.pulls++;
          if (track.sample()) throw new Error(`host memory over the bound after taking ${mib(st.taken)} MiB`);
          yield chunk;
        }
      },
    });
  }
  return entries;
}

test("importTree toward an agent that offers 2 GiB of credit and never reads: a few MiB taken, memory bounded", T, async (t) => {
  const { runtime, served } = await hostileSandbox(
    t,
    {
      list: (agent, req) => agent.send(agentEnc.listResult(req.id, 0)),
      exec: async (agent, req) => {
        await agent.send(agentEnc.started(req.id));
        agent.stopReading();
      },
    },
    { hello: { inWindow: MAX_WINDOW } },
  );
  await runtime.listFiles({ path: "." }); // connected
  const agent = served.agents[0];
  const track = tracker();
  const st = { taken: 0, pulls: 0 };
  const ac = new AbortController();
  const importing = runtime.importTree(bigSource(GiB, track, st), { path: "dst", abortSignal: ac.signal });
  importing.catch(() => {});
  await new Promise((resolve) => (agent.requests.some((r) => r.type === "EXEC") ? resolve() : agent.once("request", resolve)));
  // Until the host stops taking the source (many turns of the loop without a pull) or
  // takes far more than its bound.
  await untilSourceHeld(st, track);
  track.report(`import, agent not reading (${mib(st.taken)} MiB taken of 1024)`);
  assert.ok(st.taken < 32 * 1024 * 1024, `the host took ${mib(st.taken)} MiB of the source toward an agent that reads nothing`);
  assert.ok(track.maxRss < BOUND, `rss grew by ${mib(track.maxRss)} MiB`);
  ac.abort();
  await assert.rejects(importing, { name: "AbortError" });
});

test("many imports toward an agent that never reads: the bytes queued toward it are bounded for the connection, not per request's credit", T, async (t) => {
  const N = 24;
  const { runtime } = await hostileSandbox(
    t,
    {
      list: (agent, req) => agent.send(agentEnc.listResult(req.id, 0)),
      exec: async (agent, req) => {
        await agent.send(agentEnc.started(req.id, 100 + req.id, 100 + req.id));
        agent.stopReading();
      },
    },
    { hello: { inWindow: 1 << 20 } }, // the most credit the host accepts per request
  );
  await runtime.listFiles({ path: "." });
  const track = tracker();
  const st = { taken: 0, pulls: 0 };
  const ac = new AbortController();
  const imports = [];
  for (let i = 0; i < N; i++) {
    const p = runtime.importTree(bigSource(GiB / N, track, st, 64 * 1024), { path: `dst${i}`, abortSignal: ac.signal });
    p.catch(() => {});
    imports.push(p);
  }
  await untilSourceHeld(st, track);
  // The agent reads nothing after the first EXEC: the host has started every import's
  // EXEC (its request frames wait in the write queue) and each one has 1 MiB of credit.
  track.report(`${N} imports, agent not reading (${mib(st.taken).toFixed(1)} MiB taken)`);
  // Each import's own buffer (1 MiB) and a frame; toward the agent, AGENT_TX_HIGH (256 KiB)
  // and the kernel's buffers for the whole connection, not N x the credit.
  assert.ok(st.taken < N * 1.5 * (1 << 20), `the host took ${mib(st.taken)} MiB for ${N} imports`);
  assert.ok(track.maxRss < BOUND, `rss grew by ${mib(track.maxRss)} MiB`);
  ac.abort();
  for (const p of imports) await assert.rejects(p, { name: "AbortError" });
});

test("an agent that reads nothing while requests pile up: past 8 MiB queued toward it the connection fails", T, async (t) => {
  const { runtime, served } = await hostileSandbox(t, {
    list: (agent, req) => agent.send(agentEnc.listResult(req.id, 0)),
    exec: (agent) => agent.stopReading(),
  });
  await runtime.listFiles({ path: "." });
  const track = tracker();
  // Requests of about 900 KiB each (7 arguments of 130000 bytes): 16 of them, 14 MiB.
  const args = Array.from({ length: 7 }, (_, i) => String(i).repeat(130000));
  const results = await Promise.allSettled(Array.from({ length: 16 }, () => runtime.exec({ command: "true", args })));
  track.sample();
  track.report("16 requests of 900 KiB toward an agent that reads nothing");
  for (const r of results) {
    assert.equal(r.status, "rejected");
    assert.equal(r.reason.code, "docker_command_failed", r.reason.message);
  }
  assert.ok(results.some((r) => /stopped reading its input \(more than 8 MiB/.test(r.reason.message)));
  assert.ok(track.maxRss < BOUND, `rss grew by ${mib(track.maxRss)} MiB`);
  // The next call has a new agent.
  await runtime.listFiles({ path: "." });
  assert.equal(served.agents.length, 2);
});

test("importTree toward an agent that reads and returns credit as it goes: 64 MiB arrive whole through the bounded queue", T, async (t) => {
  const { runtime } = await hostileSandbox(t, {
    list: (agent, req) => agent.send(agentEnc.listResult(req.id, 0)),
    exec: async (agent, req) => {
      await agent.send(agentEnc.started(req.id));
      let got = 0;
      agent.on("data", (id, payload, end) => {
        if (id !== req.id) return;
        got += payload.length;
        if (payload.length > 0) agent.send(agentEnc.window(req.id, payload.length));
        if (end) agent.send(agentEnc.execResult(req.id, { code: 0 })).then(() => (agent.imported = got));
      });
    },
  });
  await runtime.listFiles({ path: "." });
  const track = tracker();
  const st = { taken: 0, pulls: 0 };
  await runtime.importTree(bigSource(64 << 20, track, st, 256 * 1024), { path: "dst" });
  track.report(`import of 64 MiB through an honest double (${mib(st.taken)} MiB taken)`);
  assert.equal(st.taken, 64 << 20);
});

test("writeFile of the HELLO's whole credit to an agent that reads but grants nothing: the queue resumes as its writes complete", T, async (t) => {
  const { runtime, served } = await hostileSandbox(
    t,
    {
      list: (agent, req) => agent.send(agentEnc.listResult(req.id, 0)),
      write: (agent, req) => {
        let got = 0;
        agent.on("data", (id, payload, end) => {
          if (id !== req.id) return;
          got += payload.length;
          if (end) agent.send(agentEnc.writeResult(req.id, got));
        });
      },
    },
    { hello: { inWindow: 1 << 20 } },
  );
  await runtime.listFiles({ path: "." });
  await runtime.writeFile({ path: "f.bin", data: new Uint8Array(1 << 20) });
  assert.equal([...served.agents[0].received.values()].reduce((a, b) => a + b, 0), 1 << 20);
});

test("an agent granting more credit than it was sent bytes is a protocol violation: importTree and writeFile fail at once", T, async (t) => {
  const { runtime, served } = await hostileSandbox(t, {
    list: (agent, req) => agent.send(agentEnc.listResult(req.id, 0)),
    exec: async (agent, req) => {
      await agent.send(agentEnc.started(req.id));
      agent.stopReading();
      await agent.send(agentEnc.window(req.id, MAX_WINDOW - 262144));
    },
    write: async (agent, req) => {
      agent.stopReading();
      await agent.send(agentEnc.window(req.id, 1 << 30));
    },
  });
  await runtime.listFiles({ path: "." });
  const track = tracker();
  const st = { taken: 0, pulls: 0 };
  await expectCode(runtime.importTree(bigSource(GiB, track, st), { path: "dst" }), "docker_command_failed", /sandbox agent sent a WINDOW for more bytes than it was sent/);
  track.sample();
  track.report(`import, 2 GiB granted (${mib(st.taken)} MiB taken of 1024)`);
  assert.ok(st.taken < 32 * 1024 * 1024, `taken ${mib(st.taken)} MiB`);
  assert.ok(track.maxRss < BOUND, `rss grew by ${mib(track.maxRss)} MiB`);
  await expectCode(runtime.writeFile({ path: "f.bin", data: new Uint8Array(4 << 20) }), "docker_command_failed", /sandbox agent sent a WINDOW for more bytes than it was sent/);
  assert.equal(served.agents.length, 2);
});

// watchFiles (src/runtime/agent_watch.c): records are decoded frame by frame and never
// kept, so the lies are in the records and the counts; the flood is held by the credit.
test("a watch record that does not decode, or a watch result that miscounts, fails the watch and ends the connection", T, async (t) => {
  let n = 0;
  const { served, runtime } = await hostileSandbox(t, {
    watch: async (agent, req) => {
      n++;
      if (n === 1) await agent.send(agentEnc.data(req.id, Buffer.concat([agentEnc.wevent("ok"), agentEnc.wevent("../etc/passwd")])));
      else if (n === 2) await agent.send(Buffer.concat([agentEnc.data(req.id, agentEnc.wevent("a", { kind: 2 })), agentEnc.watchResult(req.id, 7)]));
      else if (n === 3) await agent.send(agentEnc.data(req.id, agentEnc.wevent("cut").subarray(0, 5)));
      else await agent.send(Buffer.concat([agentEnc.data(req.id, agentEnc.wevent("x")), agentEnc.watchResult(req.id, 1, 1)]));
    },
  });
  const events = async () => {
    const seen = [];
    for await (const e of runtime.watchFiles({ recursive: true })) seen.push(e);
    return seen;
  };
  await expectCode(events(), "docker_command_failed", /a watch record that does not decode/);
  await expectCode(events(), "docker_command_failed", /a watch result that does not count the records it sent/);
  await expectCode(events(), "docker_command_failed", /a watch record that does not decode/);
  assert.equal(served.agents.length, 3);
  assert.deepEqual(await events(), [{ type: "create", path: "x", kind: "file" }]);
  assert.equal(served.agents.length, 4);
  assert.deepEqual(served.agents[3].requests.at(-1), { id: served.agents[3].requests.at(-1).id, type: "WATCH", flags: 1, window: 65536, maxWatches: 8192, path: "" });
});

test("a flood of watch records toward a consumer that stopped reading: held by the credit, memory bounded", T, async (t) => {
  const st = { sent: 0, records: 0, stalled: null };
  const record = agentEnc.wevent("flood/0123456789");
  const { runtime } = await hostileSandbox(t, {
    watch: async (agent, req) => {
      // Whole frames of records, as long as the host grants credit; "stalled" once it
      // has granted nothing for a while (polled by turns, not by time).
      for (;;) {
        const room = Math.min(agent.credit(req.id), MAX_DATA);
        const count = Math.floor(room / record.length);
        if (count === 0) {
          let idle = 0;
          while (agent.credit(req.id) < record.length && idle < 3000 && !agent.closed) {
            await turn();
            idle++;
          }
          if (agent.closed) return;
          if (agent.credit(req.id) < record.length) {
            st.stalled = st.records;
            st.resolve?.();
            if (!(await agent.waitCredit(req.id, record.length))) return;
          }
          continue;
        }
        agent.spend(req.id, count * record.length);
        if (!(await agent.send(agentEnc.data(req.id, Buffer.concat(Array(count).fill(record)))))) return;
        st.sent += count * record.length;
        st.records += count;
      }
    },
  });
  const track = tracker();
  const controller = new AbortController();
  const iterator = runtime.watchFiles({ abortSignal: controller.signal })[Symbol.asyncIterator]();
  const stalled = new Promise((resolve) => (st.resolve = resolve));
  for (let i = 0; i < 10; i++) assert.equal((await iterator.next()).value.type, "create");
  // The consumer stops here: the host pauses the credit at 4096 waiting events.
  await stalled;
  track.sample();
  track.report(`watch flood (${st.records} records, ${mib(st.sent).toFixed(2)} MiB sent)`);
  assert.ok(st.records <= 10 + 4096 + Math.ceil((2 * 65536) / record.length), `records sent before the stall: ${st.records}`);
  assert.ok(track.maxRss < BOUND, `rss grew by ${mib(track.maxRss)} MiB`);
  // Aborted: what was queued is still delivered, then the abort's reason.
  controller.abort();
  await assert.rejects(async () => {
    for (;;) if ((await iterator.next()).done) return;
  }, { name: "AbortError" });
});
