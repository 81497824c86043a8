// runtime.execStream on a real engine: output events in the order the command wrote them
// and then exactly one result that matches what exec returns; back-pressure against a slow
// consumer (all of 50 MiB arrives, memory stays bounded); leaving the loop, aborting and
// timing out end the command; validation errors surface on the first next().
import test, { after, before } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { DockerSandboxClient, DockerSandboxError } from "../../lib/index.js";
import { baseOptions, dockerExec, psOf, settledWithinATurn, untilNoProcess, untilProcess } from "../helpers/docker.js";

const client = new DockerSandboxClient();
const MiB = 1024 * 1024;
const text = (bytes) => Buffer.from(bytes).toString("utf8");

let sandbox;
let container;
before(async () => {
  sandbox = await client.createSandbox(baseOptions());
  container = `anvia-sandbox-${sandbox.id}`;
});
after(async () => {
  await sandbox?.destroy();
});

// ps in this file's sandbox; a leak would last for the whole sleep.
const processes = () => psOf(container);
const waitUntilGone = (pattern) => untilNoProcess(container, pattern);
const waitUntilRunning = (pattern) => untilProcess(container, pattern);

// Consecutive chunks of the same stream merged, so the test does not depend on chunking.
function merged(events) {
  const out = [];
  for (const event of events) {
    const previous = out.at(-1);
    if (previous !== undefined && previous.type === event.type) previous.text += text(event.data);
    else out.push({ type: event.type, text: text(event.data) });
  }
  return out;
}

async function collect(iterable) {
  const events = [];
  for await (const event of iterable) events.push(event);
  return events;
}

test("events come in the order written, then exactly one result equal to exec's", async () => {
  const options = {
    command: "sh",
    args: ["-c", "printf 'one\\n'; sleep 0.15; printf 'two' >&2; sleep 0.15; printf 'three\\n'; sleep 0.15; printf 'four\\n' >&2; sleep 0.15; printf 'five'; exit 4"],
  };
  const events = await collect(sandbox.runtime.execStream(options));
  const results = events.filter((event) => event.type === "result");
  assert.equal(results.length, 1, "exactly one result event");
  assert.equal(events.at(-1).type, "result", "the result comes last");
  const output = events.slice(0, -1);
  for (const event of output) {
    assert.ok(event.type === "stdout" || event.type === "stderr", event.type);
    assert.deepEqual(Object.keys(event).sort(), ["data", "type"]);
    assert.ok(event.data instanceof Uint8Array);
    assert.ok(event.data.byteLength > 0, "no empty chunks");
  }
  assert.deepEqual(merged(output), [
    { type: "stdout", text: "one\n" },
    { type: "stderr", text: "two" },
    { type: "stdout", text: "three\n" },
    { type: "stderr", text: "four\n" },
    { type: "stdout", text: "five" },
  ]);
  const final = events.at(-1);
  assert.deepEqual(Object.keys(final).sort(), ["result", "type"]);
  const { durationMs, ...rest } = final.result;
  assert.ok(durationMs >= 600, String(durationMs));
  const direct = await sandbox.runtime.exec(options);
  const { durationMs: directDuration, ...directRest } = direct;
  assert.ok(directDuration >= 600);
  assert.deepEqual(
    { ...rest, stdout: Buffer.from(rest.stdout), stderr: Buffer.from(rest.stderr) },
    { ...directRest, stdout: Buffer.from(directRest.stdout), stderr: Buffer.from(directRest.stderr) },
  );
  assert.equal(rest.status, "exited");
  assert.equal(rest.exitCode, 4);
  assert.equal(text(rest.stdout), "one\nthree\nfive");
  assert.equal(text(rest.stderr), "twofour\n");
});

test("a slow consumer receives all of 50 MiB in order, with memory bounded by back-pressure", async (t) => {
  const line = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ!?\n"; // 65 bytes
  const pattern = Buffer.from(line.repeat(1024)); // a whole number of lines
  const total = 50 * MiB;
  const rssBefore = process.memoryUsage().rss;
  let rssMax = rssBefore;
  let rssAfterPause = rssBefore;
  let received = 0;
  let chunks = 0;
  let mismatchAt = -1;
  let result;
  const started = Date.now();
  for await (const event of sandbox.runtime.execStream({
    command: "sh",
    args: ["-c", `yes '${line.slice(0, -1)}' | head -c ${total}`],
    timeoutMs: 180_000,
  })) {
    if (event.type === "result") {
      result = event.result;
      continue;
    }
    assert.equal(event.type, "stdout");
    // Compare with the pattern at the running offset: nothing lost, nothing reordered.
    if (mismatchAt < 0) {
      const offset = received % pattern.length;
      const data = Buffer.from(event.data.buffer, event.data.byteOffset, event.data.byteLength);
      for (let done = 0; done < data.length; ) {
        const start = (offset + done) % pattern.length;
        const n = Math.min(pattern.length - start, data.length - done);
        if (data.compare(pattern, start, start + n, done, done + n) !== 0) {
          mismatchAt = received + done;
          break;
        }
        done += n;
      }
    }
    received += event.data.byteLength;
    chunks += 1;
    if (chunks % 64 === 0) rssMax = Math.max(rssMax, process.memoryUsage().rss);
    if (chunks === 1) {
      // A long pause at the start: without back-pressure the whole output would pile
      // up in this process now (the command writes 50 MiB in well under a second).
      await sleep(1500);
      rssAfterPause = process.memoryUsage().rss;
      rssMax = Math.max(rssMax, rssAfterPause);
    }
    await sleep(1); // the consumer is slower than the command
  }
  const growth = (rssMax - rssBefore) / MiB;
  const pauseGrowth = (rssAfterPause - rssBefore) / MiB;
  t.diagnostic(`${chunks} chunks in ${Date.now() - started} ms, RSS growth ${growth.toFixed(1)} MiB (${pauseGrowth.toFixed(1)} MiB after the pause)`);
  assert.equal(received, total);
  assert.equal(mismatchAt, -1, `content differs from the expected pattern at byte ${mismatchAt}`);
  assert.ok(pauseGrowth < 24, `RSS grew by ${pauseGrowth.toFixed(1)} MiB while the consumer paused`);
  assert.ok(growth < 64, `RSS grew by ${growth.toFixed(1)} MiB`);
  assert.equal(result?.status, "exited");
  assert.equal(result.exitCode, 0);
  // The result keeps the first maxOutputBytes (1 MiB by default), like exec.
  assert.equal(result.stdoutTruncated, true);
  assert.equal(result.stdout.byteLength, MiB);
  assert.ok(Buffer.from(result.stdout).equals(Buffer.from(line.repeat(Math.ceil(MiB / line.length))).subarray(0, MiB)));
});

test("stdin through execStream: cat gives back every byte as events; the result keeps the head", async () => {
  const input = randomBytes(3 * MiB);
  const events = await collect(sandbox.runtime.execStream({ command: "cat", input }));
  const out = Buffer.concat(events.filter((e) => e.type === "stdout").map((e) => e.data));
  assert.ok(out.equals(input), `got ${out.length} bytes back`);
  const { result } = events.at(-1);
  assert.equal(result.exitCode, 0);
  assert.equal(result.stdoutTruncated, true);
  assert.ok(Buffer.from(result.stdout).equals(input.subarray(0, MiB)));
});

test("leaving the loop after the first event ends the command", async (t) => {
  const started = Date.now();
  let first;
  for await (const event of sandbox.runtime.execStream({ command: "sh", args: ["-c", "echo start; sleep 3101 & sleep 3102 & wait"] })) {
    first = event;
    break;
  }
  const elapsed = Date.now() - started;
  assert.equal(first.type, "stdout");
  assert.equal(text(first.data), "start\n");
  t.diagnostic(`break took ${elapsed} ms`);
  const listing = await waitUntilGone(/sleep 310[12]/);
  t.diagnostic(`processes gone ${listing.elapsed} ms later`);
  assert.doesNotMatch(listing.listing, /sleep 310[12]/, listing.listing);
  // return() on an iterator ends it: later next() calls are done.
  const iterator = sandbox.runtime.execStream({ command: "sh", args: ["-c", "echo a; sleep 3103"] });
  assert.equal(text((await iterator.next()).value.data), "a\n");
  assert.deepEqual(await iterator.return(undefined), { done: true, value: undefined });
  assert.deepEqual(await iterator.next(), { done: true, value: undefined });
  const after = await waitUntilGone(/sleep 3103/);
  t.diagnostic(`processes gone ${after.elapsed} ms later`);
  assert.doesNotMatch(after.listing, /sleep 3103/, after.listing);
});

test("validation errors surface on the first next(), not when execStream is called", async () => {
  const cases = [
    [undefined, TypeError, "options must be an object."],
    [{ command: "" }, TypeError, "command must be a non-empty string."],
    [{ command: "ls", args: [1] }, TypeError, "args must contain only strings."],
    [{ command: "ls", env: { "bad name": "x" } }, TypeError, "Invalid environment variable name: bad name"],
    [{ command: "ls", timeoutMs: 0 }, RangeError, "timeoutMs must be a positive safe integer."],
    [{ command: "ls", input: {} }, TypeError, "input must be a string or Uint8Array."],
    [{ command: "ls", cwd: "/etc" }, DockerSandboxError, "Sandbox path must be relative: /etc"],
  ];
  for (const [options, type, message] of cases) {
    let iterator;
    assert.doesNotThrow(() => {
      iterator = sandbox.runtime.execStream(options);
    }, JSON.stringify(options));
    assert.equal(typeof iterator[Symbol.asyncIterator], "function");
    await assert.rejects(iterator.next(), (error) => {
      assert.ok(error instanceof type, `${JSON.stringify(options)}: ${error}`);
      assert.equal(error.message, message);
      return true;
    });
    assert.deepEqual(await iterator.next(), { done: true, value: undefined });
  }
});

test("abort mid-stream rejects the iteration with the reason and ends the command", async (t) => {
  const controller = new AbortController();
  const reason = new Error("stop streaming");
  const seen = [];
  const iterate = async () => {
    for await (const event of sandbox.runtime.execStream({
      command: "sh",
      args: ["-c", "echo go; sleep 3104 & sleep 3105 & wait"],
      abortSignal: controller.signal,
    })) {
      seen.push(event);
    }
  };
  const outcome = iterate().then(
    () => ({ completed: true }),
    (error) => ({ error }),
  );
  await waitUntilRunning(/sleep 3105/);
  const abortedAt = performance.now();
  let settled = false;
  outcome.then(() => (settled = true));
  controller.abort(reason);
  // Within a turn of the loop: the rejection waited for no answer (an event, not a time).
  assert.ok(await settledWithinATurn(() => settled), "the abort's rejection waited for I/O");
  const { error, completed } = await outcome;
  const latency = performance.now() - abortedAt;
  t.diagnostic(`rejected ${latency.toFixed(1)} ms after the abort`);
  assert.equal(completed, undefined, "the iteration completed instead of rejecting");
  assert.equal(error, reason);
  assert.deepEqual(merged(seen), [{ type: "stdout", text: "go\n" }]);
  const listing = await waitUntilGone(/sleep 310[45]/);
  t.diagnostic(`processes gone ${listing.elapsed} ms later`);
  assert.doesNotMatch(listing.listing, /sleep 310[45]/, listing.listing);
  // Already aborted: the first next() rejects with the reason, nothing runs.
  const early = new Error("too late");
  const iterator = sandbox.runtime.execStream({ command: "touch", args: ["/tmp/stream-aborted-marker"], abortSignal: AbortSignal.abort(early) });
  await assert.rejects(iterator.next(), (e) => e === early);
  const check = await dockerExec(container, ["sh", "-c", "test -e /tmp/stream-aborted-marker && echo exists || echo absent"]);
  assert.equal(check.stdout, "absent\n");
});

test("a timeout ends the stream with a timed_out result and no process left", async () => {
  const events = await collect(
    sandbox.runtime.execStream({ command: "sh", args: ["-c", "echo before; sleep 3106 & wait"], timeoutMs: 2000 }),
  );
  assert.deepEqual(merged(events.slice(0, -1)), [{ type: "stdout", text: "before\n" }]);
  const { result } = events.at(-1);
  assert.equal(events.at(-1).type, "result");
  assert.equal(result.status, "timed_out");
  assert.equal(Object.hasOwn(result, "exitCode"), false);
  assert.equal(text(result.stdout), "before\n");
  const listing = await processes();
  assert.doesNotMatch(listing, /sleep 3106/, listing);
});
