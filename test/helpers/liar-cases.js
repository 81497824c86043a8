// The lies of the static liar (test/agent/c/liar.c), each as a case that two suites run:
// test/integration/agent-liar.test.js with the liar planted in a real container (the host's
// RSS is the host's own there), and test/fake/agent-liar.test.js with the same program
// behind the fake engine (no Docker: the sanitizer stage meets it too). A case gets
//   { rt, lie(mode), seen(), tmp, bound, commandTimeoutMs }
// where lie() says what the liar does at its next request (liar.mode), seen() is its notes
// (one request type a line), tmp a scratch directory of the host and bound the RSS growth
// allowed, in MiB, and commandTimeoutMs the sandbox's (short: a case waits for it). Every wait is for an event (a note of the liar, the source no longer
// pulled for many turns of the loop), never for a time. The cases run in this order on one
// sandbox; the last (hoard) leaves its connection to a liar that never reads again.
import assert from "node:assert/strict";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { setImmediate as turn } from "node:timers/promises";
import { expectCode, mib } from "./fake-engine.js";

const rss = () => process.memoryUsage().rss;

const countOf = async (seen, type) => (await seen()).split("\n").filter((l) => l === type).length;

/** Resolves once the liar has noted more requests of `type` than `before`; rejects if
 * `call` settles first (the lie never got its request: the call's outcome says why). */
async function untilSeen(seen, type, before, call) {
  let settled = null;
  call.then(
    (v) => (settled = { v }),
    (e) => (settled = { e }),
  );
  while ((await countOf(seen, type)) <= before) {
    if (settled) throw new Error(`the call settled before the liar got its ${type}: ${settled.e ?? JSON.stringify(settled.v)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** An import source of `files` files of 8 MiB, counting what the host takes. */
function counted(files, st, bound, base) {
  const chunk = Buffer.alloc(1 << 20, 0x61);
  return Array.from({ length: files }, (_, i) => ({
    kind: "file",
    path: `big/${i}.bin`,
    byteLength: 8 << 20,
    async *open() {
      for (let off = 0; off < 8 << 20; off += chunk.length) {
        st.taken += chunk.length;
        st.pulls++;
        st.maxRss = Math.max(st.maxRss, rss() - base);
        if (mib(st.maxRss) > bound) throw new Error(`host RSS over the bound after taking ${mib(st.taken)} MiB`);
        yield chunk;
      }
    },
  }));
}

export const liarCases = [
  {
    name: "endless listing records within the host's credit: refused at the 100001st entry, RSS within a few MiB",
    async run({ rt, lie, bound }) {
      await lie("list-flood");
      const base = rss();
      await expectCode(rt.listFiles({ path: "." }), "docker_command_failed", /sandbox agent sent more listing entries than the 100000 asked for/);
      const grown = mib(rss() - base);
      console.log(`# RSS growth under an endless listing: ${grown.toFixed(1)} MiB`);
      assert.ok(grown < bound, `RSS grew ${grown.toFixed(1)} MiB`);
    },
  },
  {
    name: "a reply for a request id the host never sent ends the connection",
    async run({ rt, lie }) {
      await lie("wrong-id");
      await expectCode(rt.listFiles({ path: "." }), "docker_command_failed", /sandbox agent sent a frame for no request/);
    },
  },
  {
    name: "a WINDOW returning more credit than the host sent is a protocol violation",
    async run({ rt, lie, bound }) {
      await lie("window-lie");
      const base = rss();
      await expectCode(rt.writeFile({ path: "f.bin", data: new Uint8Array(4 << 20) }), "docker_command_failed", /sandbox agent sent a WINDOW for more bytes than it was sent/);
      assert.ok(mib(rss() - base) < bound);
    },
  },
  {
    name: "a reply that never comes: the caller's abort ends the call with its reason",
    async run({ rt, lie, seen }) {
      await lie("never");
      const before = await countOf(seen, "LIST");
      const reason = new Error("the caller gave up");
      const controller = new AbortController();
      const call = rt.listFiles({ path: ".", abortSignal: controller.signal });
      // Aborted once the liar holds the request (it notes each one it gets), not before.
      await untilSeen(seen, "LIST", before, call);
      controller.abort(reason);
      await assert.rejects(call, (e) => e === reason);
    },
  },
  {
    name: "a listing whose reply never comes fails at commandTimeoutMs, as the engine path's timed-out find does",
    async run({ rt, lie, commandTimeoutMs }) {
      await lie("never");
      const error = await expectCode(rt.listFiles({ path: "." }), "docker_command_failed", /^Unable to list sandbox files\.$/);
      assert.deepEqual(error.details, { status: "timed_out", path: ".", timeoutMs: commandTimeoutMs });
    },
  },
  {
    name: "an export of endless directories stops at maxFiles: quota_exceeded, nothing made on the host, RSS within a few MiB",
    async run({ rt, lie, tmp, bound }) {
      await lie("dir-flood");
      const out = join(tmp, "flood");
      const base = rss();
      const error = await expectCode(rt.exportTree({ kind: "workspace" }, out, { quotas: { maxFiles: 100 } }), "quota_exceeded", /Tree transfer exceeds maxFiles \(101 > 100\): d100/);
      assert.deepEqual([error.details.files, error.details.directories], [0, 100]);
      assert.ok(!existsSync(out), "the destination was not made");
      assert.deepEqual(readdirSync(tmp).filter((f) => f.startsWith(".flood.")), [], "no temporary directory is left");
      // To a consumer: it sees at most maxFiles entries.
      let entries = 0;
      await expectCode(rt.exportTree({ kind: "workspace" }, () => void entries++, { quotas: { maxFiles: 50 } }), "quota_exceeded", /maxFiles \(51 > 50\)/);
      assert.ok(entries <= 50, `the consumer saw ${entries} entries`);
      assert.ok(mib(rss() - base) < bound, `RSS grew ${mib(rss() - base).toFixed(1)} MiB`);
    },
  },
  {
    name: "an export whose archive stops coming mid-header (pings still answered) fails after idleTimeoutMs",
    async run({ rt, lie, tmp }) {
      await lie("stall");
      const out = join(tmp, "stalled");
      await expectCode(rt.exportTree({ kind: "workspace" }, out, { idleTimeoutMs: 1000 }), "timeout", /nothing came from the sandbox for 1000 ms \(idleTimeoutMs/);
      assert.ok(!existsSync(out), "the destination was not made");
    },
  },
  {
    name: "an import toward a liar that offers 2 GiB of credit and never reads: a few MiB taken, RSS bounded, the abort ends it",
    async run({ rt, lie, seen, bound }) {
      // hoard is decided at the liar's start: end the connection with a lie first, so the
      // next call starts a liar that reads "hoard".
      await lie("wrong-id");
      await expectCode(rt.listFiles({ path: "." }), "docker_command_failed", /sandbox agent sent a frame for no request/);
      await lie("hoard");
      const before = await countOf(seen, "EXEC");
      const st = { taken: 0, pulls: 0, maxRss: 0 };
      const base = rss();
      const ac = new AbortController();
      const importing = rt.importTree(counted(128, st, bound, base), { path: "dst", abortSignal: ac.signal });
      importing.catch(() => {});
      await untilSeen(seen, "EXEC", before, importing);
      // Until the host stops taking the source: 3000 turns of the loop without a pull.
      for (let idle = 0, last = -1; idle < 3000 && st.taken < 64 << 20; ) {
        await turn();
        st.maxRss = Math.max(st.maxRss, rss() - base);
        if (st.pulls !== last) [last, idle] = [st.pulls, 0];
        else idle++;
      }
      console.log(`# import toward a liar that never reads: ${mib(st.taken)} MiB taken of 1024, RSS +${mib(st.maxRss).toFixed(1)} MiB`);
      assert.ok(st.taken < 32 << 20, `the host took ${mib(st.taken)} MiB of the source toward a liar that reads nothing`);
      assert.ok(mib(st.maxRss) < bound, `RSS grew ${mib(st.maxRss).toFixed(1)} MiB`);
      ac.abort();
      await assert.rejects(importing, { name: "AbortError" });
    },
  },
];
