// Replies that never come: an AbortSignal ends the operation at once with the signal's
// reason; a command's timeout (exec timeoutMs, or the sandbox's commandTimeoutMs) ends an
// exec that is stuck anywhere (create, start, inspect) with status "timed_out", running the
// kill-tree exec when the command may have started.
import test from "node:test";
import assert from "node:assert/strict";
import {
  DockerSandboxClient,
  HANG_MS,
  fakeSandbox,
  isKiller,
  loopTurns,
  notKiller,
  startFakeEngine,
  turnsUntilSettled,
  until,
  upgradeHead,
} from "../helpers/fake-engine.js";

// Nothing here waits on a timer of its own: an abort comes once the request it must cut
// has reached the fake, and "at once" is counted in turns of the event loop.
const T = { timeout: HANG_MS };
// The most turns of the event loop an abort may take to reject the operation: it needs no
// I/O and no timer (it takes none today), which would take many turns however fast or
// slow the machine.
const AT_ONCE_TURNS = 3;

/**
 * Starts `run`, aborts it once `ready` resolves (the request it hangs on reached the
 * fake); checks the rejection is the abort's reason and resolves how many turns of the
 * event loop it took.
 */
async function abortWhen(ready, run) {
  const controller = new AbortController();
  const reason = new Error(`test abort ${Math.random()}`);
  const running = run(controller.signal);
  const settled = running.then(
    () => {},
    () => {},
  );
  await Promise.race([ready, settled]);
  const turns = await turnsUntilSettled(running, () => controller.abort(reason));
  let error;
  try {
    await running;
    assert.fail("expected the operation to be aborted");
  } catch (e) {
    error = e;
  }
  if (error instanceof assert.AssertionError) throw error;
  assert.equal(error, reason, `rejected with: ${error?.message}`);
  return turns;
}

/**
 * Awaits `main` with a control operation started just after it: the same stuck operation
 * with a longer timeout, which a busy machine delays as much. Resolves main's value and
 * whether the control ended first; the control is then aborted.
 */
async function againstControl(main, control) {
  const order = [];
  const controller = new AbortController();
  const mainDone = main.finally(() => order.push("main"));
  const controlDone = control(controller.signal).then(
    () => order.push("control"),
    () => order.push("control"),
  );
  const value = await mainDone;
  const controlFirst = order[0] === "control";
  controller.abort(new Error("the control is no longer needed"));
  await controlDone;
  return { value, controlFirst };
}

const markerOf = (exec) => exec.body.Env.find((e) => e.startsWith("ANVIA_SANDBOX_EXEC_ID=")).split("=")[1];

test("resume: a container inspection that never answers, aborted", T, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  fake.addContainer("h1");
  fake.route("GET", "/containers/:name/json", { hang: true });
  const client = new DockerSandboxClient({ host: fake.host });
  const turns = await abortWhen(fake.waitFor("GET", "/containers/anvia-sandbox-h1/json"), (abortSignal) => client.resumeSandbox({ id: "h1", abortSignal }));
  assert.ok(turns <= AT_ONCE_TURNS, `rejected ${turns} turns of the event loop after the abort`);
  assert.equal(fake.seen("POST", "/start").length, 0);
});

test("exec: an exec create that never answers, aborted", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/containers/:name/exec", { hang: true });
  const turns = await abortWhen(fake.waitFor("POST", /^\/containers\/[^/]+\/exec$/), (abortSignal) => runtime.exec({ command: "echo", abortSignal }));
  assert.ok(turns <= AT_ONCE_TURNS, `rejected ${turns} turns of the event loop after the abort`);
});

test("exec: an upgrade that is never answered, aborted (and the command's tree is ended)", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/exec/:id/start", notKiller({ hang: true }));
  const turns = await abortWhen(fake.waitFor("POST", /^\/exec\/[^/]+\/start$/), (abortSignal) => runtime.exec({ command: "sleep", args: ["100"], abortSignal }));
  assert.ok(turns <= AT_ONCE_TURNS, `rejected ${turns} turns of the event loop after the abort`);
  // The command may have started: the kill-tree exec runs with its marker.
  const killerCreate = await waitForKiller(fake);
  const original = [...fake.state.execs.values()].find((e) => !isKiller(e));
  assert.equal(killerCreate.body.Cmd[4], markerOf(original));
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
  const turns = await abortWhen(fake.waitFor("GET", "/archive"), (abortSignal) => runtime.readFile({ path: "a.txt", abortSignal }));
  assert.ok(turns <= AT_ONCE_TURNS, `rejected ${turns} turns of the event loop after the abort`);
});

test("writeFile: an upload that never answers, aborted", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("PUT", "/containers/:name/archive", { hang: true });
  const turns = await abortWhen(fake.waitFor("PUT", "/archive"), (abortSignal) => runtime.writeTextFile({ path: "a.txt", text: "x", abortSignal }));
  assert.ok(turns <= AT_ONCE_TURNS, `rejected ${turns} turns of the event loop after the abort`);
});

test("pullImage: a pull whose progress stream stalls, aborted", T, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  fake.route("POST", "/images/create", {
    raw: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n14\r\n{\"status\":\"Pulling\"}\r\n",
    then: "hang",
  });
  const client = new DockerSandboxClient({ host: fake.host });
  // Aborted once the progress so far has had turns of the event loop to arrive.
  const stalled = fake.waitFor("POST", "/images/create").then(() => loopTurns(10));
  const turns = await abortWhen(stalled, (abortSignal) => client.pullImage({ image: "stall:1", abortSignal }));
  assert.ok(turns <= AT_ONCE_TURNS, `rejected ${turns} turns of the event loop after the abort`);
});

/** Waits for a kill-tree exec (the one for `marker`, if given), however long it takes. */
function waitForKiller(fake, marker) {
  return until(() => [...fake.state.execs.values()].find((e) => isKiller(e) && (marker === undefined || e.body.Cmd[4] === marker)));
}

test("exec timeoutMs: an exec create that never answers times out (no kill-tree: nothing started)", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/containers/:name/exec", { hang: true });
  const started = Date.now();
  // Not long after the 300 ms: before the same exec with a timeout of 2000 ms.
  const { value: result, controlFirst } = await againstControl(runtime.exec({ command: "echo", timeoutMs: 300 }), (abortSignal) =>
    runtime.exec({ command: "echo", args: ["control"], timeoutMs: 2000, abortSignal }),
  );
  const took = Date.now() - started;
  assert.equal(result.status, "timed_out");
  assert.equal(result.exitCode, undefined);
  assert.equal(result.stdout.length, 0);
  assert.ok(took >= 290, `took ${took} ms`);
  assert.equal(controlFirst, false, "the exec with a timeout of 2000 ms ended first");
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
  // The partial frame must have been read when the timeout comes: on a machine too slow
  // for that, the same again with twice the timeout. Not long after the timeout: before
  // the same exec with ten times the timeout.
  for (let timeoutMs = 300; ; timeoutMs *= 2) {
    const started = Date.now();
    const { value: result, controlFirst } = await againstControl(runtime.exec({ command: "sleep", args: [String(timeoutMs)], timeoutMs }), (abortSignal) =>
      runtime.exec({ command: "sleep", args: ["control"], timeoutMs: 10 * timeoutMs, abortSignal }),
    );
    const took = Date.now() - started;
    assert.equal(result.status, "timed_out");
    if (result.stdout.length === 0 && timeoutMs < 60_000) continue;
    assert.equal(Buffer.from(result.stdout).toString(), "partial");
    assert.ok(took >= timeoutMs - 10, `took ${took} ms`);
    assert.equal(controlFirst, false, `the exec with a timeout of ${10 * timeoutMs} ms ended first`);
    // The kill-tree exec targets the command's marker.
    const original = [...fake.state.execs.values()].find((e) => !isKiller(e) && e.body.Cmd?.[1] === String(timeoutMs));
    await waitForKiller(fake, markerOf(original));
    break;
  }
});

test("exec timeoutMs: an exec inspect that never answers times out", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("GET", "/exec/:id/json", notKiller({ hang: true }));
  // The inspection must have been asked for (the stream read to its end) when the timeout
  // comes: on a machine too slow for that, the same again with twice the timeout.
  for (let timeoutMs = 400; ; timeoutMs *= 2) {
    const result = await runtime.exec({ command: "echo", args: ["done", String(timeoutMs)], timeoutMs });
    assert.equal(result.status, "timed_out");
    const exec = [...fake.state.execs.values()].find((e) => !isKiller(e) && e.body.Cmd?.[2] === String(timeoutMs));
    if (fake.seen("GET", `/exec/${exec.id}/json`).length === 0 && timeoutMs < 60_000) continue;
    assert.equal(Buffer.from(result.stdout).toString(), `done ${timeoutMs}\n`);
    break;
  }
});

test("the sandbox's commandTimeoutMs ends a stuck exec when the call gives no timeoutMs", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t, { labels: { "anvia.sandbox.runtime.command-timeout-ms": "350" } });
  fake.route("POST", "/exec/:id/start", notKiller({ hang: true }));
  const started = Date.now();
  // Not long after the 350 ms: before the same exec given ten times as long.
  const { value: result, controlFirst } = await againstControl(runtime.exec({ command: "sleep", args: ["1000"] }), (abortSignal) =>
    runtime.exec({ command: "sleep", args: ["control"], timeoutMs: 3500, abortSignal }),
  );
  assert.equal(result.status, "timed_out");
  const took = Date.now() - started;
  assert.ok(took >= 340, `took ${took} ms`);
  assert.equal(controlFirst, false, "the exec with a timeout of 3500 ms ended first");
});

test("a kill-tree exec that itself hangs does not hold the timed-out command forever", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  // Everything after the upgrade hangs, the kill-tree exec included.
  fake.route("POST", "/exec/:id/start", { hang: true });
  const started = Date.now();
  // The kill-tree exec has its own 10 s bound: the result comes before that of the same
  // exec timed out at 5 s, which waits as long for its own kill-tree exec (the 15 s this
  // test used to allow), on a machine however busy.
  const { value: result, controlFirst } = await againstControl(runtime.exec({ command: "sleep", args: ["1000"], timeoutMs: 200 }), (abortSignal) =>
    runtime.exec({ command: "sleep", args: ["control"], timeoutMs: 5000, abortSignal }),
  );
  assert.equal(result.status, "timed_out");
  const took = Date.now() - started;
  assert.equal(controlFirst, false, `the exec timed out at 5 s ended first (this one took ${took} ms)`);
});

test("a /_ping that never answers does not wedge the client: the next operation pings again", T, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  fake.addContainer("p1");
  fake.route("GET", "/_ping", { hang: true }, { times: 1 });
  const client = new DockerSandboxClient({ host: fake.host });
  await abortWhen(fake.waitFor("GET", "/_ping"), (abortSignal) => client.resumeSandbox({ id: "p1", abortSignal }));
  // The engine answers pings now. A second call must not wait on the first, stuck ping
  // (if it did, this abort after minutes says so before the test's own timeout).
  const sandbox = await client.resumeSandbox({ id: "p1", abortSignal: AbortSignal.timeout(HANG_MS / 2) });
  assert.equal(sandbox.id, "p1");
});
