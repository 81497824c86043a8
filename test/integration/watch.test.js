// watchFiles on a real engine (src/runtime/agent_watch.c, src/agent/watch.c). Through the
// agent (the default transport) every event kind, recursion into directories made later,
// links never followed, a burst that overflows or is delivered whole, and every way a
// watch ends; on the engine path (ANVIA_SANDBOX_TRANSPORT=engine) the clear refusal.
//
// A watch is set up in the sandbox after the iterator's first next(): each test writes a
// probe file until its event arrives (an event, not a timer, says the watch is live).
import test, { after, describe } from "node:test";
import assert from "node:assert/strict";
import { DockerSandboxClient, DockerSandboxError } from "../../lib/index.js";
import { baseOptions } from "../helpers/docker.js";

const client = new DockerSandboxClient();
const enginePath = process.env.ANVIA_SANDBOX_TRANSPORT === "engine";
const sandboxes = [];
after(() => Promise.allSettled(sandboxes.map((s) => s.destroy())));

async function make(extra = {}) {
  const sandbox = await client.createSandbox(baseOptions(extra));
  sandboxes.push(sandbox);
  return sandbox;
}

const sh = (sandbox, script) => sandbox.runtime.exec({ command: "sh", args: ["-c", script] });

// Consumes a watch in the background: every event kept, waiters woken as events come.
function collect(iterable) {
  const events = [];
  let waiters = [];
  let ended = false;
  let failure;
  const wake = () => {
    for (const w of waiters) w();
    waiters = [];
  };
  const done = (async () => {
    try {
      for await (const event of iterable) {
        events.push(event);
        wake();
      }
    } catch (error) {
      failure = error;
    } finally {
      ended = true;
      wake();
    }
  })();
  // Resolves once pred(events) holds; rejects if the watch ends first.
  async function until(pred, what) {
    for (;;) {
      if (pred(events)) return;
      if (ended) throw new Error(`the watch ended before ${what}: ${failure ?? "no error"} ${JSON.stringify(events.slice(-5))}`);
      await new Promise((resolve) => waiters.push(resolve));
    }
  }
  return { events, until, done, get failure() { return failure; }, get ended() { return ended; } };
}

const has = (type, path) => (events) => events.some((e) => e.type === type && e.path === path);

// Writes `probe` again and again until its event arrives: the watch is live.
async function live(sandbox, watch, probe) {
  let seen = false;
  const waiting = watch.until(has("create", probe), `the probe ${probe}`).then(() => (seen = true));
  for (let i = 0; !seen; i++) {
    await sh(sandbox, `rm -f '${probe}'; : > '${probe}'`);
    await Promise.race([waiting, new Promise((resolve) => setTimeout(resolve, 100))]);
    if (watch.ended) break;
  }
  await waiting;
}

describe("watchFiles through the agent", { skip: enginePath && "the engine path refuses it" }, () => {
  test("create, modify, delete and rename, in directories made after the watch began", async () => {
    const sandbox = await make();
    const controller = new AbortController();
    const watch = collect(sandbox.runtime.watchFiles({ recursive: true, abortSignal: controller.signal }));
    await live(sandbox, watch, "probe");
    // Once a directory's create has arrived, it is watched (the agent adds the watch before
    // it sends the record): the changes in it made after that are all seen.
    await sh(sandbox, "mkdir -p a/b/c");
    await watch.until(has("create", "a/b/c"), "the new directories");
    await sh(sandbox, "echo one > a/b/c/f.txt && echo two >> a/b/c/f.txt && mv a/b/c/f.txt a/b/g.txt && rm a/b/g.txt");
    await watch.until(has("delete", "a/b/g.txt"), "the delete");
    const ofPath = (p) => watch.events.filter((e) => e.path === p).map((e) => `${e.type}:${e.kind}`);
    assert.deepEqual(ofPath("a")[0], "create:directory");
    assert.ok(watch.events.some((e) => e.type === "create" && e.path === "a/b/c/f.txt" && e.kind === "file"));
    assert.ok(ofPath("a/b/c/f.txt").includes("modify:file"));
    assert.ok(ofPath("a/b/c/f.txt").includes("rename:file"), JSON.stringify(watch.events));
    assert.deepEqual(ofPath("a/b/g.txt"), ["create:file", "delete:file"]);
    controller.abort();
    await watch.done;
    assert.equal(watch.failure?.name, "AbortError");
  });

  test("not recursive: only the directory's own entries; leaving the loop ends the watch", async () => {
    const sandbox = await make();
    await sh(sandbox, "mkdir -p sub");
    const seen = [];
    let isLive = false;
    // Probes until the watch reports one (then the changes are made once, from the loop).
    const probing = (async () => {
      while (!isLive) {
        await sh(sandbox, "rm -f sub/probe; : > sub/probe");
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    for await (const event of sandbox.runtime.watchFiles({ path: "sub" })) {
      seen.push(event);
      if (!isLive && event.type === "create" && event.path === "sub/probe") {
        isLive = true;
        await probing;
        await sh(sandbox, "mkdir sub/deep && : > sub/deep/inner && : > outside && : > sub/last");
      }
      if (event.path === "sub/last") break;
    }
    assert.ok(has("create", "sub/deep")(seen));
    assert.ok(!seen.some((e) => e.path === "sub/deep/inner" || e.path === "outside"), JSON.stringify(seen));
    // The watch ended in the sandbox with the loop: nothing of it is left in the agent, and
    // the runtime works on.
    assert.equal((await sh(sandbox, "true")).exitCode, 0);
  });

  test("a link to a directory outside is reported, never followed", async () => {
    const sandbox = await make();
    await sh(sandbox, "mkdir -p /tmp/outside && ln -s /tmp/outside link");
    const controller = new AbortController();
    const watch = collect(sandbox.runtime.watchFiles({ recursive: true, abortSignal: controller.signal }));
    await live(sandbox, watch, "probe");
    await sh(sandbox, ": > /tmp/outside/secret && ln -s /tmp/outside link2 && : > marker");
    await watch.until(has("create", "marker"), "the marker");
    assert.ok(watch.events.some((e) => e.type === "create" && e.path === "link2" && e.kind === "file"));
    assert.ok(!watch.events.some((e) => e.path?.includes("secret")), JSON.stringify(watch.events));
    controller.abort();
    await watch.done;
  });

  test("10,000 files in a burst: every create, or an overflow; never a hang", async () => {
    const sandbox = await make();
    const controller = new AbortController();
    const watch = collect(sandbox.runtime.watchFiles({ recursive: true, abortSignal: controller.signal }));
    await live(sandbox, watch, "probe");
    await sh(sandbox, "mkdir burst");
    await watch.until(has("create", "burst"), "the burst's directory");
    await sh(sandbox, "cd burst && i=0; while [ $i -lt 10000 ]; do : > f$i; i=$((i+1)); done; : > ../burst-done");
    await watch.until(
      (events) => events.some((e) => e.type === "overflow") || has("create", "burst-done")(events),
      "the end of the burst",
    );
    const overflowed = watch.events.some((e) => e.type === "overflow");
    if (!overflowed) {
      const created = new Set(watch.events.filter((e) => e.type === "create" && e.path.startsWith("burst/")).map((e) => e.path));
      assert.equal(created.size, 10000);
    }
    controller.abort();
    await watch.done;
  });

  test("the watch ends when its directory is removed", async () => {
    const sandbox = await make();
    await sh(sandbox, "mkdir -p gone");
    const watch = collect(sandbox.runtime.watchFiles({ path: "gone" }));
    await live(sandbox, watch, "gone/probe");
    await sh(sandbox, "rm -rf gone");
    await watch.done;
    assert.equal(watch.failure, undefined);
    assert.ok(has("delete", "gone/probe")(watch.events));
  });

  test("bad arguments are refused before anything runs", async () => {
    const sandbox = await make();
    const first = (options) => sandbox.runtime.watchFiles(options)[Symbol.asyncIterator]().next();
    await assert.rejects(first({ recursive: "yes" }), { name: "TypeError", message: "recursive must be a boolean." });
    await assert.rejects(first(null), { name: "TypeError", message: "options must be an object." });
    await assert.rejects(first({ path: "../up" }), (e) => e instanceof DockerSandboxError && e.code === "invalid_path");
    await assert.rejects(first({ path: "missing" }), (e) => e instanceof DockerSandboxError);
    await sh(sandbox, ": > plain");
    await assert.rejects(first({ path: "plain" }), (e) => e instanceof DockerSandboxError && e.code === "invalid_path");
  });
});

describe("watchFiles on the engine path", () => {
  test("is refused with invalid_state", async () => {
    const engine = new DockerSandboxClient({ transport: "engine" });
    const sandbox = await engine.createSandbox(baseOptions());
    sandboxes.push(sandbox);
    await assert.rejects(
      sandbox.runtime.watchFiles()[Symbol.asyncIterator]().next(),
      (e) => e instanceof DockerSandboxError && e.code === "invalid_state" && /needs the sandbox agent/.test(e.message),
    );
  });
});
