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
//  - terminals (the TERM_* family, src/runtime/agent_term.c): the requests' shape; a
//    RESULT before STARTED, a second STARTED, output records whose offsets do not follow
//    one another (or wrap, or are too short to hold one), a RESULT whose head is not where
//    the output ended or whose tail is past its head, DATA for a request without output:
//    each a protocol violation that fails the call and ends the connection; an unknown id
//    (ERROR not_found) is an answer, the call's `process` error; a flood of output toward
//    a consumer that stopped reading is held by the credit (none granted while paused, a
//    record past it ends the connection); a TERM_LIST count of 4 billion is refused on its
//    4 bytes; a `wait` or `output` RESULT that does not say `ended` is a lie too (this one
//    fails: agent_term.c takes it as an exit with code 0).
// The same kinds of lie from a static liar planted in a real container, with the host's
// RSS measured in a process that runs no double: test/integration/agent-liar.test.js.
// Memory: process.memoryUsage().rss sampled before and during each attack (each sample
// taken as the attack goes, by bytes sent or taken: never by time); the bound asserted
// is generous (64 MiB) while each attack offers 1 GiB.
import test from "node:test";
import assert from "node:assert/strict";
import { setImmediate as turn } from "node:timers/promises";
import { HANG_MS, startFakeEngine, DockerSandboxClient, expectCode, mib } from "../helpers/fake-engine.js";
import {
  serveHostileAgent, fakeAgentDir, agentEnc, memory, memoryHeld, MAX_DATA, MAX_PAYLOAD, TERM, TERMF, TERM_REC_FIXED, dec,
} from "../helpers/hostile-agent.js";

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

// ---- terminals (src/runtime/agent_term.c, PROTOCOL.md "Terminals") ----

const closedOf = (agent) => new Promise((resolve) => (agent.closed ? resolve() : agent.once("closed", resolve)));

// An honest keeper behind the agent: STARTED (pid 4242) then the RESULT; `output` sends
// "hello" and " world" from `since` and ends (head since + 11); `wait` ends by SIGTERM;
// `input` answers once the input's END came.
const honestTerm = {
  term_open: (agent, req) => agent.send(Buffer.concat([agentEnc.started(req.id, 4242, 4242), agentEnc.termResult(req.id, { cols: req.cols, rows: req.rows })])),
  term_attach: async (agent, req) => {
    await agent.send(agentEnc.started(req.id, 4242, 4242));
    if (req.flags & TERM.INPUT) await agent.input(req.id);
    if (req.flags & TERM.OUTPUT) await agent.send(Buffer.concat([agentEnc.termData(req.id, req.since, "hello"), agentEnc.termData(req.id, req.since + 5, " world")]));
    const end = req.flags & (TERM.OUTPUT | TERM.WAIT);
    await agent.send(agentEnc.termResult(req.id, end ? { flags: TERMF.ENDED, how: 1, signal: 15, code: 143, head: req.since + 11 } : {}));
  },
  term_resize: (agent, req) => agent.send(agentEnc.termResult(req.id, { cols: req.cols, rows: req.rows })),
  term_signal: (agent, req) => agent.send(agentEnc.signalResult(req.id)),
  term_list: (agent, req) => agent.send(agentEnc.termListResult(req.id, ["b-2", "a.1"])),
};

// The chunks of an output() stream and how it ended (null: done).
async function drain(iterable) {
  const chunks = [];
  try {
    for await (const c of iterable) chunks.push({ offset: c.offset, data: Buffer.from(c.data).toString() });
    return { chunks, error: null };
  } catch (error) {
    return { chunks, error };
  }
}

test("terminal requests as PROTOCOL.md lays them out: TERM_OPEN, TERM_ATTACH (attach, output, wait, input), TERM_RESIZE, TERM_SIGNAL, TERM_LIST", T, async (t) => {
  // The helper's frames are the agent's codec's (test/agent/lib/wire.js decodes them strictly).
  const body = (f) => f.subarray(12);
  assert.deepEqual(dec.termRecord(body(agentEnc.termData(1, 2 ** 40, "ab"))), { offset: 2 ** 40, data: Buffer.from("ab") });
  assert.equal(TERM_REC_FIXED, 8);
  const r = dec.termResult(body(agentEnc.termResult(1, { flags: TERMF.ENDED, how: 1, signal: 9, code: 137, cols: 7, rows: 3, head: 10, tail: 4 })));
  assert.deepEqual([r.ended, r.how, r.signal, r.code, r.cols, r.rows, r.head, r.tail], [true, 1, 9, 137, 7, 3, 10, 4]);
  assert.deepEqual(dec.termListResult(body(agentEnc.termListResult(1, ["a", "b.c"]))), ["a", "b.c"]);

  const { served, runtime } = await hostileSandbox(t, honestTerm);
  const term = await runtime.startTerminal({ command: "bash", args: ["-l"], cwd: "sub", env: { A: "1" }, cols: 100, rows: 30, scrollbackBytes: 8192 });
  assert.equal(term.pid, 4242);
  const shell = await runtime.startTerminal();
  assert.equal((await runtime.attachTerminal({ id: term.id })).id, term.id);
  assert.deepEqual(await drain(term.output({ since: 7 })), { chunks: [{ offset: 7, data: "hello" }, { offset: 12, data: " world" }], error: null });
  assert.deepEqual(await term.wait(), { exitCode: 143, signal: "SIGTERM" });
  await term.write("hi\n");
  assert.deepEqual(await term.resize({ cols: 120, rows: 40 }), { cols: 120, rows: 40 });
  assert.deepEqual(await term.kill("SIGTERM"), { delivered: true });
  assert.deepEqual(await term.kill(), { delivered: true });
  assert.deepEqual(await runtime.listTerminals(), [{ id: "b-2" }, { id: "a.1" }]);

  const agent = served.agents[0];
  assert.equal(served.agents.length, 1);
  const reqs = agent.requests.map(({ id, ...rest }) => rest);
  const ids = agent.requests.map((q) => q.id);
  assert.deepEqual(ids, [...ids].sort((a, b) => a - b));
  const tid = term.id;
  assert.deepEqual(reqs[0], { type: "TERM_OPEN", flags: 0, window: 0, cols: 100, rows: 30, scrollback: 8192, termId: tid, cwd: "/workspace/sub", argv: ["bash", "-l"], env: ["A=1"] });
  // No command: the default shell, through /bin/sh; the defaults: 80x24, 1 MiB kept.
  assert.equal(reqs[1].termId, shell.id);
  assert.notEqual(shell.id, tid);
  assert.deepEqual({ ...reqs[1], argv: [reqs[1].argv[0], reqs[1].argv[1], reqs[1].argv[3]] }, { type: "TERM_OPEN", flags: 0, window: 0, cols: 80, rows: 24, scrollback: 1 << 20, termId: shell.id, cwd: "/workspace", argv: ["/bin/sh", "-c", "anvia-terminal"], env: [] });
  assert.deepEqual(reqs.slice(2), [
    { type: "TERM_ATTACH", flags: 0, window: 0, since: 0, termId: tid },
    { type: "TERM_ATTACH", flags: TERM.OUTPUT, window: 256 * 1024, since: 7, termId: tid },
    { type: "TERM_ATTACH", flags: TERM.WAIT, window: 0, since: 0, termId: tid },
    { type: "TERM_ATTACH", flags: TERM.INPUT, window: 0, since: 0, termId: tid },
    { type: "TERM_RESIZE", cols: 120, rows: 40, termId: tid },
    { type: "TERM_SIGNAL", signal: 15, termId: tid },
    { type: "TERM_SIGNAL", signal: 9, termId: tid },
    { type: "TERM_LIST", flags: 0 },
  ]);
  // The input went on stream 1 of its TERM_ATTACH, END on its last frame.
  assert.equal((await agent.input(ids[5])).toString(), "hi\n");
});

test("a terminal RESULT before its STARTED, or a second STARTED, is a protocol violation: the call fails, the connection ends", T, async (t) => {
  let n = 0;
  const { served, runtime } = await hostileSandbox(t, {
    ...honestTerm,
    term_open: async (agent, req) => {
      n++;
      if (n === 1) await agent.send(agentEnc.termResult(req.id));
      else if (n === 2) await agent.send(Buffer.concat([agentEnc.started(req.id), agentEnc.started(req.id), agentEnc.termResult(req.id)]));
      else return honestTerm.term_open(agent, req);
    },
    term_attach: async (agent, req) => {
      if (req.flags & TERM.OUTPUT) await agent.send(agentEnc.termResult(req.id, { flags: TERMF.ENDED, head: 0 }));
      else return honestTerm.term_attach(agent, req);
    },
    term_resize: (agent, req) => agent.send(Buffer.concat([agentEnc.started(req.id), agentEnc.termResult(req.id)])),
  });
  await expectCode(runtime.startTerminal(), "docker_command_failed", /^Unable to use sandbox terminal: the sandbox agent sent a terminal result before its STARTED\.$/);
  await closedOf(served.agents[0]);
  await expectCode(runtime.startTerminal(), "docker_command_failed", /^Unable to use sandbox terminal: the sandbox agent sent a second STARTED for a terminal\.$/);
  await closedOf(served.agents[1]);
  const term = await runtime.startTerminal();
  const out = await drain(term.output());
  assert.deepEqual(out.chunks, []);
  assert.equal(out.error?.code, "docker_command_failed");
  assert.match(out.error.message, /^Unable to use sandbox terminal: the sandbox agent sent a terminal result before its STARTED\.$/);
  await closedOf(served.agents[2]);
  // TERM_RESIZE has no STARTED: the connection refuses it before the terminal's code sees it.
  await expectCode(term.resize({ cols: 10, rows: 10 }), "docker_command_failed", /^The sandbox agent sent a bad STARTED\.$/);
  await closedOf(served.agents[3]);
  assert.deepEqual(await runtime.listTerminals(), [{ id: "b-2" }, { id: "a.1" }]);
  assert.equal(served.agents.length, 5);
});

test("terminal output records that do not follow one another, wrap, are too short, come before STARTED, or end where the RESULT's head is not: each a violation", T, async (t) => {
  const FOLLOW = /^Unable to use sandbox terminal: the sandbox agent sent terminal output that does not follow the output before it\.$/;
  const rec = agentEnc.termData;
  const started = (id) => agentEnc.started(id, 4242, 4242);
  const raw = (id, bytes) => agentEnc.data(id, bytes);
  // Each lie: the frames, the chunks the consumer gets before the error, the error.
  const lies = [
    { name: "a gap", frames: (id) => [started(id), rec(id, 0, "abc"), rec(id, 5, "x")], chunks: [{ offset: 0, data: "abc" }], message: FOLLOW },
    { name: "an overlap", frames: (id) => [started(id), rec(id, 0, "abc"), rec(id, 2, "x")], chunks: [{ offset: 0, data: "abc" }], message: FOLLOW },
    { name: "a repeat", frames: (id) => [started(id), rec(id, 4, "abc"), rec(id, 4, "abc")], chunks: [{ offset: 4, data: "abc" }], message: FOLLOW },
    { name: "an offset that wraps", frames: (id) => [started(id), rec(id, 2n ** 64n - 1n, "xy")], chunks: [], message: FOLLOW },
    { name: "a record of its offset only", frames: (id) => [started(id), raw(id, Buffer.alloc(TERM_REC_FIXED))], chunks: [], message: FOLLOW },
    { name: "a record of 3 bytes", frames: (id) => [started(id), raw(id, Buffer.from([0, 0, 0]))], chunks: [], message: FOLLOW },
    { name: "an empty DATA", frames: (id) => [started(id), rec(id, 0, "ok"), raw(id, Buffer.alloc(0))], chunks: [{ offset: 0, data: "ok" }], message: FOLLOW },
    { name: "output before STARTED", frames: (id) => [rec(id, 0, "early"), started(id)], chunks: [], message: FOLLOW },
    {
      name: "a head past the output",
      frames: (id) => [started(id), rec(id, 0, "abc"), agentEnc.termResult(id, { flags: TERMF.ENDED, head: 9 })],
      chunks: [{ offset: 0, data: "abc" }],
      message: /^Unable to use sandbox terminal: the sandbox agent sent a terminal result whose head is not where its output ended\.$/,
    },
    {
      name: "a head short of the output",
      frames: (id) => [started(id), rec(id, 10, "abcdef"), agentEnc.termResult(id, { flags: TERMF.ENDED, head: 12 })],
      chunks: [{ offset: 10, data: "abcdef" }],
      message: /^Unable to use sandbox terminal: the sandbox agent sent a terminal result whose head is not where its output ended\.$/,
    },
    // The decoder refuses a tail past the head (aw_check_term_result) before agent_term.c's
    // own check: the connection's message.
    {
      name: "a tail past the head",
      frames: (id) => [started(id), rec(id, 0, "abc"), agentEnc.termResult(id, { flags: TERMF.ENDED, head: 3, tail: 4 })],
      chunks: [{ offset: 0, data: "abc" }],
      message: /^The sandbox agent sent a result that does not decode\.$/,
    },
    { name: "stderr", frames: (id) => [started(id), agentEnc.data(id, agentEnc.trecord(0, "e"), 3)], chunks: [], message: /^The sandbox agent sent stderr for a request without it\.$/ },
  ];
  let n = 0;
  const { served, runtime } = await hostileSandbox(t, {
    ...honestTerm,
    term_attach: async (agent, req) => {
      if (!(req.flags & TERM.OUTPUT)) return honestTerm.term_attach(agent, req);
      const lie = lies[n++];
      if (lie) return agent.send(Buffer.concat(lie.frames(req.id)));
      // Honest: a first record past `since` says what was lost; the rest follow it.
      await agent.send(Buffer.concat([started(req.id), rec(req.id, 1000, "kept"), rec(req.id, 1004, "!"), agentEnc.termResult(req.id, { flags: TERMF.ENDED, head: 1005, tail: 1000 })]));
    },
  });
  const term = await runtime.attachTerminal({ id: "t1" });
  for (const [i, lie] of lies.entries()) {
    const out = await drain(term.output());
    assert.ok(out.error, `${lie.name}: the output ended without an error`);
    assert.equal(out.error.code, "docker_command_failed", `${lie.name}: ${out.error.message}`);
    assert.match(out.error.message, lie.message, lie.name);
    assert.deepEqual(out.chunks, lie.chunks, lie.name);
    // The connection was ended: the next call has a new agent.
    await closedOf(served.agents[i]);
  }
  assert.deepEqual(await drain(term.output()), { chunks: [{ offset: 1000, data: "kept" }, { offset: 1004, data: "!" }], error: null });
  assert.equal(served.agents.length, lies.length + 1);
});

test("a tail past the head in any terminal RESULT, or an exit before the end, does not decode: the call fails, the connection ends", T, async (t) => {
  let n = 0;
  const bad = [{ head: 5, tail: 10 }, { head: 0, tail: 1 }, { code: 3 }, { flags: TERMF.ENDED, how: 1, signal: 9, code: 9 }];
  const { served, runtime } = await hostileSandbox(t, {
    ...honestTerm,
    term_attach: async (agent, req) => {
      const lie = bad[n++];
      if (lie) return agent.send(Buffer.concat([agentEnc.started(req.id), agentEnc.termResult(req.id, lie)]));
      return honestTerm.term_attach(agent, req);
    },
    term_resize: (agent, req) => agent.send(agentEnc.termResult(req.id, { cols: req.cols, rows: req.rows, head: 1, tail: 2 })),
  });
  for (let i = 0; i < bad.length; i++) {
    await expectCode(runtime.attachTerminal({ id: "t1" }), "docker_command_failed", /^The sandbox agent sent a result that does not decode\.$/);
    await closedOf(served.agents[i]);
  }
  const term = await runtime.attachTerminal({ id: "t1" });
  await expectCode(term.resize({ cols: 5, rows: 5 }), "docker_command_failed", /^The sandbox agent sent a result that does not decode\.$/);
  await closedOf(served.agents[bad.length]);
  assert.equal(served.agents.length, bad.length + 1);
});

test("DATA for a terminal request without output (attach, wait, write, resize, kill, list) is a violation: the call fails, the connection ends", T, async (t) => {
  const FOLLOW = /^Unable to use sandbox terminal: the sandbox agent sent terminal output that does not follow the output before it\.$/;
  const GRANTED = /^The sandbox agent sent more data than it was granted\.$/;
  const NO_OUTPUT = /^The sandbox agent sent data for a request without output\.$/;
  const record = (id) => agentEnc.termData(id, 0, "sneaked");
  const empty = (id) => agentEnc.data(id, Buffer.alloc(0));
  // TERM_ATTACH may carry output, so the connection lets DATA within its credit through (a
  // request without `output` has none: only an empty DATA) and the terminal refuses it.
  let attach = [record, empty];
  const { served, runtime } = await hostileSandbox(t, {
    term_attach: async (agent, req) => {
      const lie = attach.shift();
      if (lie === undefined) return honestTerm.term_attach(agent, req);
      await agent.send(Buffer.concat([agentEnc.started(req.id), lie(req.id), agentEnc.termResult(req.id)]));
    },
    term_resize: (agent, req) => agent.send(Buffer.concat([record(req.id), agentEnc.termResult(req.id)])),
    term_signal: (agent, req) => agent.send(Buffer.concat([empty(req.id), agentEnc.signalResult(req.id)])),
    term_list: (agent, req) => agent.send(Buffer.concat([record(req.id), agentEnc.termListResult(req.id, [])])),
  });
  let agents = 0;
  const refused = async (call, message) => {
    await expectCode(call(), "docker_command_failed", message);
    await closedOf(served.agents[agents++]);
  };
  await refused(() => runtime.attachTerminal({ id: "t1" }), GRANTED);
  await refused(() => runtime.attachTerminal({ id: "t1" }), FOLLOW);
  const term = await runtime.attachTerminal({ id: "t1" }); // on the next agent, which the wait ends
  attach = [record, empty];
  await refused(() => term.wait(), GRANTED);
  await refused(() => term.write("x"), FOLLOW);
  await refused(() => term.resize({ cols: 9, rows: 9 }), NO_OUTPUT);
  await refused(() => term.kill(), NO_OUTPUT);
  await refused(() => runtime.listTerminals(), NO_OUTPUT);
  assert.equal(served.agents.length, agents);
});

test("ERROR not_found for a terminal's id is an answer: the call's `process` error Unknown sandbox terminal, the connection kept", T, async (t) => {
  // The keeper of "t-1" answers the attach, then is gone for every later call.
  let attached = false;
  let listed = 0;
  const notFound = (agent, req) => agent.send(agentEnc.error(req.id, "not_found", { err: 2, detail: "no keeper" }));
  const { served, runtime } = await hostileSandbox(t, {
    term_open: notFound,
    term_attach: (agent, req) => {
      if (req.termId === "io-1") return agent.send(agentEnc.error(req.id, "io", { err: 5, detail: "keeper lied" }));
      if (req.termId === "t-1" && !attached) {
        attached = true;
        return honestTerm.term_attach(agent, req);
      }
      return notFound(agent, req);
    },
    term_resize: notFound,
    term_signal: notFound,
    term_list: (agent, req) =>
      listed++ === 0 ? notFound(agent, req) : agent.send(agentEnc.termListResult(req.id, [])),
  });
  // A list names no terminal: its not_found is the agent's failure, not an unknown one.
  await expectCode(runtime.listTerminals(), "docker_command_failed", /^Unable to list sandbox terminals \(not_found\)$/);
  const err = await expectCode(runtime.attachTerminal({ id: "gone-1" }), "process", /^Unknown sandbox terminal: gone-1$/);
  assert.deepEqual(err.details, { agentError: "not_found", terminal: "gone-1", errno: 2, detail: "no keeper" });
  // A handle whose terminal went meanwhile: every call says so.
  const term = await runtime.attachTerminal({ id: "t-1" });
  const unknown = /^Unknown sandbox terminal: t-1$/;
  const out = await drain(term.output());
  assert.deepEqual(out.chunks, []);
  assert.equal(out.error?.code, "process");
  assert.match(out.error.message, unknown);
  await expectCode(term.wait(), "process", unknown);
  await expectCode(term.write("x"), "process", unknown);
  await expectCode(term.resize({ cols: 3, rows: 3 }), "process", unknown);
  await expectCode(term.kill("SIGINT"), "process", unknown);
  // Another kind is the agent's failure, not an unknown terminal.
  const io = await expectCode(runtime.attachTerminal({ id: "io-1" }), "docker_command_failed", /^Unable to use sandbox terminal: io-1 \(io\)$/);
  assert.equal(io.details.detail, "keeper lied");
  // not_found for TERM_OPEN is not "unknown" (the id is the host's new one).
  await expectCode(runtime.startTerminal(), "docker_command_failed", /^Unable to use sandbox terminal: [0-9a-f-]{36} \(not_found\)$/);
  assert.deepEqual(await runtime.listTerminals(), []);
  assert.equal(served.agents.length, 1);
  assert.equal(served.agents[0].closed, false);
});

test("a flood of terminal output toward an output() consumer that stopped reading: held by the credit, none granted while paused, memory bounded; a record past the credit ends the connection", T, async (t) => {
  // Records of a whole DATA frame each (8 + 65528 bytes), as long as the host grants
  // credit; "stalled" once it has granted none for 3000 turns of the loop (not by time).
  // At each stall the test says what comes next: wait for credit, or a record past it.
  const REC = MAX_DATA;
  const bytes = Buffer.alloc(REC - TERM_REC_FIXED, 0x61);
  const st = { sent: 0, records: 0, next: 0, stalls: [], onStall: null, track: null };
  const { served, runtime } = await hostileSandbox(t, {
    ...honestTerm,
    term_attach: async (agent, req) => {
      if (!(req.flags & TERM.OUTPUT)) return honestTerm.term_attach(agent, req);
      await agent.send(agentEnc.started(req.id, 4242, 4242));
      st.next = req.since;
      for (;;) {
        if (agent.credit(req.id) >= REC) {
          agent.spend(req.id, REC);
          if (!(await agent.send(agentEnc.termData(req.id, st.next, bytes)))) return;
          st.next += bytes.length;
          st.sent += REC;
          st.records++;
          st.track.sample();
          continue;
        }
        let idle = 0;
        while (agent.credit(req.id) < REC && idle < 3000 && !agent.closed) {
          await turn();
          idle++;
        }
        if (agent.closed) return;
        if (agent.credit(req.id) >= REC) continue;
        const what = await new Promise((resolve) => {
          st.stalls.push({ records: st.records, granted: agent.granted(req.id), credit: agent.credit(req.id) });
          st.onStall(resolve);
        });
        if (what === "past") {
          // One record more than the credit left: the host counts what it granted.
          const len = Math.max(agent.credit(req.id) + 1, TERM_REC_FIXED + 1);
          await agent.send(agentEnc.termData(req.id, st.next, Buffer.alloc(len - TERM_REC_FIXED, 0x62)));
          return;
        }
        if (!(await agent.waitCredit(req.id, REC))) return;
      }
    },
  });
  const term = await runtime.attachTerminal({ id: "flood" });
  const agent = served.agents[0];
  st.track = tracker();
  const stalled = () => new Promise((resolve) => (st.onStall = (go) => resolve(go)));
  let stall = stalled();
  const iterator = term.output()[Symbol.asyncIterator]();
  let read = 0;
  for (; read < 10; read++) assert.equal((await iterator.next()).value.data.byteLength, bytes.length);
  // The consumer stops here: past 256 KiB waiting the host pauses the credit, and the
  // agent has at most the 256 KiB window in flight.
  let go = await stall;
  const first = st.stalls[0];
  st.track.sample();
  st.track.report(`terminal flood (${st.records} records, ${mib(st.sent).toFixed(2)} MiB sent)`);
  const bound = (consumed) => consumed + Math.ceil((256 * 1024) / bytes.length) + 1 + (256 * 1024) / REC;
  assert.ok(first.records <= bound(read), `records sent before the stall: ${first.records} (${read} read)`);
  assert.equal(first.credit, 0);
  // Paused: no credit comes, however long the loop turns.
  for (let i = 0; i < 3000; i++) await turn();
  assert.equal(agent.granted(agent.requests.at(-1).id), first.granted, "credit granted while the consumer is paused");
  assert.equal(st.records, first.records);
  // The consumer reads again: below 64 KiB waiting, what was held is granted.
  stall = stalled();
  go("wait");
  const id = agent.requests.at(-1).id;
  while (agent.granted(id) === first.granted) {
    assert.equal((await iterator.next()).value.data.byteLength, bytes.length);
    read++;
    for (let i = 0; i < 50 && agent.granted(id) === first.granted; i++) await turn();
  }
  // It resumes once fewer than 64 KiB wait: all but the last record of what it held.
  assert.ok(read - 10 <= bound(0) && read - 10 >= first.records - 10 - 1, `read ${read - 10} records before the host resumed`);
  go = await stall;
  const second = st.stalls[1];
  assert.ok(second.granted > first.granted);
  assert.ok(second.records > first.records && second.records <= bound(read), `records sent before the second stall: ${second.records} (${read} read)`);
  // A record past the credit: the host reads it (its consumer paused or not) and ends the
  // connection; what was queued is still delivered. Nothing is read meanwhile (reading
  // would resume the credit before the host sees the record, and make it no lie).
  go("past");
  await closedOf(agent);
  let tail = 0;
  const rest = await (async () => {
    try {
      for (;;) {
        const { done, value } = await iterator.next();
        if (done) return null;
        assert.equal(value.data.byteLength, bytes.length);
        tail++;
      }
    } catch (error) {
      return error;
    }
  })();
  assert.equal(rest?.code, "docker_command_failed", rest?.message);
  assert.match(rest.message, /^The sandbox agent sent more data than it was granted\.$/);
  assert.equal(read + tail, second.records, "every record taken within the credit was delivered");
  st.track.sample();
  assert.ok(st.track.maxRss < BOUND, `rss grew by ${mib(st.track.maxRss)} MiB`);
  assert.ok(st.track.maxExternal < BOUND, `external grew by ${mib(st.track.maxExternal)} MiB`);
});

test("a TERM_LIST result whose count is 4 billion, past 4096, or not what it holds: refused as it decodes, memory bounded; 4096 ids are taken", T, async (t) => {
  const id64 = (i) => `t${String(i).padStart(63, "0")}`;
  const many = (n) => Array.from({ length: n }, (_, i) => id64(i));
  const lies = [
    (id) => agentEnc.termListCount(id, 0xffffffff),
    (id) => agentEnc.termListCount(id, 0xffffffff, many(100)),
    (id) => agentEnc.termListResult(id, many(4097)),
    (id) => agentEnc.termListCount(id, 1000, many(2)),
    (id) => agentEnc.termListCount(id, 1, many(2)),
    (id) => agentEnc.termListResult(id, ["ok", "../etc"]),
    (id) => agentEnc.termListResult(id, [".hidden"]),
    (id) => agentEnc.termListResult(id, ["x".repeat(65)]),
  ];
  let n = 0;
  const { served, runtime } = await hostileSandbox(t, {
    term_list: (agent, req) => agent.send((lies[n++] ?? ((id) => agentEnc.termListResult(id, many(4096))))(req.id)),
  });
  const track = tracker();
  for (let i = 0; i < lies.length; i++) {
    await expectCode(runtime.listTerminals(), "docker_command_failed", /^The sandbox agent sent a result that does not decode\.$/);
    await closedOf(served.agents[i]);
    track.sample();
  }
  const all = await runtime.listTerminals();
  track.sample();
  track.report("TERM_LIST lies");
  assert.equal(all.length, 4096);
  assert.deepEqual(all[4095], { id: id64(4095) });
  assert.ok(track.maxRss < BOUND, `rss grew by ${mib(track.maxRss)} MiB`);
  assert.equal(served.agents.length, lies.length + 1);
});

// A `wait` or `output` request ends at the terminal's end (PROTOCOL.md "Terminals": "else at
// the terminal's end, after every record"), so its RESULT says `ended`; the agent refuses a
// keeper's end that does not (src/agent/term.c, KW_END: "sent an invalid end"). A RESULT
// without it is a lie, and must not become an exit: wait() must not say the program exited
// with 0, nor output() end as if the terminal had.
test("a wait or output RESULT that says the program has not ended is a violation, not an exit code 0", T, async (t) => {
  let n = 0;
  const { served, runtime } = await hostileSandbox(t, {
    ...honestTerm,
    term_attach: async (agent, req) => {
      if (!(req.flags & (TERM.WAIT | TERM.OUTPUT))) return honestTerm.term_attach(agent, req);
      n++;
      const records = req.flags & TERM.OUTPUT ? [agentEnc.termData(req.id, 0, "still running")] : [];
      await agent.send(Buffer.concat([agentEnc.started(req.id, 4242, 4242), ...records, agentEnc.termResult(req.id, { flags: 0, head: records.length ? 13 : 0 })]));
    },
  });
  const term = await runtime.attachTerminal({ id: "t1" });
  const VIOLATION = /^Unable to use sandbox terminal: the sandbox agent sent /;
  const waited = await term.wait().then((value) => ({ value }), (error) => ({ error }));
  assert.ok(waited.error, `wait() resolved ${JSON.stringify(waited.value)} from a RESULT without ended`);
  assert.equal(waited.error.code, "docker_command_failed", waited.error.message);
  assert.match(waited.error.message, VIOLATION);
  await closedOf(served.agents[0]);
  const out = await drain(term.output());
  assert.deepEqual(out.chunks, [{ offset: 0, data: "still running" }]);
  assert.ok(out.error, "output() ended as if the terminal had, from a RESULT without ended");
  assert.match(out.error.message, VIOLATION);
  assert.equal(n, 2);
});
