// Replies that never come: an AbortSignal ends the operation at once with the signal's
// reason; a command's timeout (exec timeoutMs, or the sandbox's commandTimeoutMs) ends an
// exec that is stuck anywhere (create, start, inspect) with status "timed_out", running the
// kill-tree exec when the command may have started.
import test from "node:test";
import assert from "node:assert/strict";
import { DockerSandboxClient, fakeSandbox, isKiller, notKiller, sleep, startFakeEngine, upgradeHead } from "../helpers/fake-engine.js";

const T = { timeout: 20_000 };

/** Aborts after `ms`; resolves how long the rejection took after the abort. */
async function abortAfter(ms, run) {
  const controller = new AbortController();
  const reason = new Error(`test abort ${Math.random()}`);
  let abortedAt;
  setTimeout(() => {
    abortedAt = Date.now();
    controller.abort(reason);
  }, ms);
  let error;
  try {
    await run(controller.signal);
    assert.fail("expected the operation to be aborted");
  } catch (e) {
    error = e;
  }
  if (error instanceof assert.AssertionError) throw error;
  assert.equal(error, reason, `rejected with: ${error?.message}`);
  return Date.now() - abortedAt;
}

test("resume: a container inspection that never answers, aborted", T, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  fake.addContainer("h1");
  fake.route("GET", "/containers/:name/json", { hang: true });
  const client = new DockerSandboxClient({ host: fake.host });
  const late = await abortAfter(150, (abortSignal) => client.resumeSandbox({ id: "h1", abortSignal }));
  assert.ok(late < 500, `rejected ${late} ms after the abort`);
  assert.equal(fake.seen("POST", "/start").length, 0);
});

test("exec: an exec create that never answers, aborted", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/containers/:name/exec", { hang: true });
  const late = await abortAfter(150, (abortSignal) => runtime.exec({ command: "echo", abortSignal }));
  assert.ok(late < 500, `rejected ${late} ms after the abort`);
});

test("exec: an upgrade that is never answered, aborted (and the command's tree is ended)", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/exec/:id/start", notKiller({ hang: true }));
  const late = await abortAfter(150, (abortSignal) => runtime.exec({ command: "sleep", args: ["100"], abortSignal }));
  assert.ok(late < 500, `rejected ${late} ms after the abort`);
  // The command may have started: the kill-tree exec runs with its marker.
  const killerCreate = await fake.waitFor("POST", /\/containers\/.*\/exec$/, 3000).then(() => waitForKiller(fake));
  const original = [...fake.state.execs.values()].find((e) => !isKiller(e));
  const marker = original.body.Env.find((e) => e.startsWith("ANVIA_SANDBOX_EXEC_ID=")).split("=")[1];
  assert.equal(killerCreate.body.Cmd[4], marker);
});

test("exec: an execStream whose stream stalls after the upgrade, aborted", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route(
    "POST",
    "/exec/:id/start",
    notKiller(async (req, res, ctx) => {
      ctx.conn.hijack();
      await res.write(upgradeHead());
      await res.write(Buffer.concat([Buffer.from([1, 0, 0, 0, 0, 0, 0, 6]), Buffer.from("first\n")]));
      res.hang();
    }),
  );
  const controller = new AbortController();
  const reason = new Error("stop streaming");
  const events = [];
  let error;
  try {
    for await (const event of runtime.execStream({ command: "tail", args: ["-f"], abortSignal: controller.signal })) {
      events.push(event);
      if (event.type === "stdout") setTimeout(() => controller.abort(reason), 50);
    }
  } catch (e) {
    error = e;
  }
  assert.equal(error, reason);
  assert.equal(events.length, 1);
  assert.equal(Buffer.from(events[0].data).toString(), "first\n");
});

test("readFile: an archive download that never answers, aborted", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("GET", "/containers/:name/archive", { hang: true });
  const late = await abortAfter(150, (abortSignal) => runtime.readFile({ path: "a.txt", abortSignal }));
  assert.ok(late < 500, `rejected ${late} ms after the abort`);
});

test("writeFile: an upload that never answers, aborted", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("PUT", "/containers/:name/archive", { hang: true });
  const late = await abortAfter(150, (abortSignal) => runtime.writeTextFile({ path: "a.txt", text: "x", abortSignal }));
  assert.ok(late < 500, `rejected ${late} ms after the abort`);
});

test("pullImage: a pull whose progress stream stalls, aborted", T, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  fake.route("POST", "/images/create", {
    raw: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n14\r\n{\"status\":\"Pulling\"}\r\n",
    then: "hang",
  });
  const client = new DockerSandboxClient({ host: fake.host });
  const late = await abortAfter(150, (abortSignal) => client.pullImage({ image: "stall:1", abortSignal }));
  assert.ok(late < 500, `rejected ${late} ms after the abort`);
});

async function waitForKiller(fake, ms = 5000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const k = [...fake.state.execs.values()].find(isKiller);
    if (k) return k;
    await sleep(5);
  }
  throw new Error("no kill-tree exec was created");
}

test("exec timeoutMs: an exec create that never answers times out (no kill-tree: nothing started)", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/containers/:name/exec", { hang: true });
  const started = Date.now();
  const result = await runtime.exec({ command: "echo", timeoutMs: 300 });
  const took = Date.now() - started;
  assert.equal(result.status, "timed_out");
  assert.equal(result.exitCode, undefined);
  assert.equal(result.stdout.length, 0);
  assert.ok(took >= 290 && took < 2000, `took ${took} ms`);
});

test("exec timeoutMs: a stream that stays silent after the upgrade times out and the tree is ended", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route(
    "POST",
    "/exec/:id/start",
    notKiller(async (req, res, ctx) => {
      ctx.conn.hijack();
      await res.write(upgradeHead());
      await res.write(Buffer.concat([Buffer.from([1, 0, 0, 0, 0, 0, 0, 7]), Buffer.from("partial")]));
      res.hang();
    }),
  );
  const started = Date.now();
  const result = await runtime.exec({ command: "sleep", args: ["1000"], timeoutMs: 300 });
  const took = Date.now() - started;
  assert.equal(result.status, "timed_out");
  assert.equal(Buffer.from(result.stdout).toString(), "partial");
  assert.ok(took >= 290 && took < 3000, `took ${took} ms`);
  const killer = await waitForKiller(fake);
  const original = [...fake.state.execs.values()].find((e) => !isKiller(e));
  assert.ok(original.body.Env.includes(`ANVIA_SANDBOX_EXEC_ID=${killer.body.Cmd[4]}`), "the kill-tree exec targets the command's marker");
});

test("exec timeoutMs: an exec inspect that never answers times out", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("GET", "/exec/:id/json", notKiller({ hang: true }));
  const result = await runtime.exec({ command: "echo", args: ["done"], timeoutMs: 400 });
  assert.equal(result.status, "timed_out");
  assert.equal(Buffer.from(result.stdout).toString(), "done\n");
});

test("the sandbox's commandTimeoutMs ends a stuck exec when the call gives no timeoutMs", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t, { labels: { "anvia.sandbox.runtime.command-timeout-ms": "350" } });
  fake.route("POST", "/exec/:id/start", notKiller({ hang: true }));
  const started = Date.now();
  const result = await runtime.exec({ command: "sleep", args: ["1000"] });
  assert.equal(result.status, "timed_out");
  const took = Date.now() - started;
  assert.ok(took >= 340 && took < 3000, `took ${took} ms`);
});

test("a kill-tree exec that itself hangs does not hold the timed-out command forever", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  // Everything after the upgrade hangs, the kill-tree exec included.
  fake.route("POST", "/exec/:id/start", { hang: true });
  const started = Date.now();
  const result = await runtime.exec({ command: "sleep", args: ["1000"], timeoutMs: 200 });
  assert.equal(result.status, "timed_out");
  const took = Date.now() - started;
  // The kill-tree exec has its own 10 s bound.
  assert.ok(took < 15_000, `took ${took} ms`);
});

test("a /_ping that never answers does not wedge the client: the next operation pings again", { timeout: 20_000 }, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  fake.addContainer("p1");
  fake.route("GET", "/_ping", { hang: true }, { times: 1 });
  const client = new DockerSandboxClient({ host: fake.host });
  await abortAfter(200, (abortSignal) => client.resumeSandbox({ id: "p1", abortSignal }));
  // The engine answers pings now. A second call must not wait on the first, stuck ping.
  const sandbox = await client.resumeSandbox({ id: "p1", abortSignal: AbortSignal.timeout(5000) });
  assert.equal(sandbox.id, "p1");
});
