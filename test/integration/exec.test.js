// runtime.exec on a real engine: exit codes, the two output streams as bytes, args, env,
// cwd, stdin (large, ignored, empty, absent), the maxOutputBytes head of each stream,
// timeouts and aborts that leave no process behind, many execs at once without blocking
// the JS thread, the original's validation messages, and the state check.
import test, { after, before } from "node:test";
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { DockerSandboxClient, DockerSandboxError } from "../../lib/index.js";
import { baseOptions, dockerExec, psOf, settledWithinATurn, untilNoProcess, untilProcess } from "../helpers/docker.js";

const client = new DockerSandboxClient();
const MiB = 1024 * 1024;
const text = (bytes) => Buffer.from(bytes).toString("utf8");
const sha256 = (bytes) => createHash("sha256").update(bytes).digest("hex");

// One sandbox with the default limits (30 s timeout, 1 MiB of output per stream), and one
// with small limits; tests in this file run one after the other and do not share files.
let sandbox;
let limited;
let container;
before(async () => {
  [sandbox, limited] = await Promise.all([
    client.createSandbox(baseOptions({ env: { BASE: "from-create", OVER: "create" } })),
    client.createSandbox(baseOptions({ runtime: { commandTimeoutMs: 1000, maxOutputBytes: 1000 } })),
  ]);
  container = `anvia-sandbox-${sandbox.id}`;
});
after(async () => {
  await Promise.allSettled([sandbox?.destroy(), limited?.destroy()]);
});

// The container's processes, seen without the library.
// ps in this file's sandbox (or another); a leak would last for the whole sleep.
const processes = (name = container) => psOf(name);
const waitUntilGone = (pattern, name = container) => untilNoProcess(name, pattern);
const waitUntilRunning = (pattern, name = container) => untilProcess(name, pattern);

test("exit codes, stdout and stderr apart, and the result's exact shape", async () => {
  for (const code of [0, 1, 7, 255]) {
    const result = await sandbox.runtime.exec({
      command: "sh",
      args: ["-c", `printf 'out %s' ${code}; printf 'err %s\\n' ${code} >&2; exit ${code}`],
    });
    assert.deepEqual(Object.keys(result).sort(), ["durationMs", "exitCode", "status", "stderr", "stdout", "stderrTruncated", "stdoutTruncated"].sort());
    assert.equal(result.status, "exited");
    assert.equal(result.exitCode, code);
    assert.ok(result.stdout instanceof Uint8Array && result.stderr instanceof Uint8Array);
    assert.equal(text(result.stdout), `out ${code}`);
    assert.equal(text(result.stderr), `err ${code}\n`);
    assert.equal(result.stdoutTruncated, false);
    assert.equal(result.stderrTruncated, false);
    assert.equal(typeof result.durationMs, "number");
    assert.ok(result.durationMs > 0, String(result.durationMs));
  }
  // A command that does not exist: the engine's own failure, not a success.
  const missing = await sandbox.runtime.exec({ command: "no-such-command-xyz" });
  assert.equal(missing.status, "exited");
  assert.ok(missing.exitCode === 126 || missing.exitCode === 127, String(missing.exitCode));
  assert.match(text(missing.stdout) + text(missing.stderr), /no-such-command-xyz/);
});

test("args reach the command verbatim, with no shell in between", async () => {
  const args = ["two words", "", "it's", '"quoted"', "$HOME", "*", "ünïcødé €", "a\nb", "--flag=x"];
  const result = await sandbox.runtime.exec({ command: "printf", args: ["[%s]", ...args] });
  assert.equal(result.exitCode, 0, text(result.stderr));
  assert.equal(text(result.stdout), args.map((a) => `[${a}]`).join(""));
});

test("env: the create env is there, exec env adds to it and overrides it", async () => {
  const result = await sandbox.runtime.exec({
    command: "sh",
    args: ["-c", 'printf "%s|%s|%s|%s" "$X" "$BASE" "$OVER" "$EMPTY"; [ "${EMPTY+set}" = set ] && printf "|empty-set"'],
    env: { X: "hello world = 'x'", OVER: "exec", EMPTY: "" },
  });
  assert.equal(result.exitCode, 0, text(result.stderr));
  assert.equal(text(result.stdout), "hello world = 'x'|from-create|exec||empty-set");
  const plain = await sandbox.runtime.exec({ command: "sh", args: ["-c", 'echo "$X|$OVER"'] });
  assert.equal(text(plain.stdout), "|create\n", "an exec's env does not stick to the sandbox");
});

test("cwd: the workspace root by default, a subdirectory when asked, normalized first", async () => {
  const made = await sandbox.runtime.exec({ command: "mkdir", args: ["-p", "cwd-test/sub dir/deep"] });
  assert.equal(made.exitCode, 0, text(made.stderr));
  const cases = [
    [undefined, "/workspace"],
    [".", "/workspace"],
    ["cwd-test", "/workspace/cwd-test"],
    ["cwd-test/sub dir/deep", "/workspace/cwd-test/sub dir/deep"],
    ["./cwd-test//sub dir/../sub dir/deep/", "/workspace/cwd-test/sub dir/deep"],
    ["cwd-test\\sub dir", "/workspace/cwd-test/sub dir"],
  ];
  for (const [cwd, expected] of cases) {
    const options = cwd === undefined ? { command: "pwd" } : { command: "pwd", cwd };
    const result = await sandbox.runtime.exec(options);
    assert.equal(result.exitCode, 0, `${cwd}: ${text(result.stdout)} ${text(result.stderr)}`);
    assert.equal(text(result.stdout), `${expected}\n`, `cwd ${JSON.stringify(cwd)}`);
  }
  // A relative path in the command resolves against cwd.
  const relative = await sandbox.runtime.exec({ command: "sh", args: ["-c", "echo here > marker.txt && ls"], cwd: "cwd-test/sub dir" });
  assert.equal(text(relative.stdout), "deep\nmarker.txt\n");
  const check = await dockerExec(container, ["cat", "/workspace/cwd-test/sub dir/marker.txt"]);
  assert.equal(check.stdout, "here\n");
});

test("stdin: 8 MiB of random bytes arrive intact; strings are sent as UTF-8; a view sends only its bytes", async () => {
  const input = randomBytes(8 * MiB);
  const hashed = await sandbox.runtime.exec({ command: "sh", args: ["-c", "sha256sum | cut -d' ' -f1"], input, timeoutMs: 60_000 });
  assert.equal(hashed.exitCode, 0, text(hashed.stderr));
  assert.equal(text(hashed.stdout), `${sha256(input)}\n`);
  const counted = await sandbox.runtime.exec({ command: "wc", args: ["-c"], input, timeoutMs: 60_000 });
  assert.equal(text(counted.stdout).trim(), String(8 * MiB));
  // A Uint8Array that is a window on a larger buffer: only the window is sent.
  const view = new Uint8Array(input.buffer, input.byteOffset + 12345, 100_000);
  const viewed = await sandbox.runtime.exec({ command: "sh", args: ["-c", "sha256sum | cut -d' ' -f1"], input: view });
  assert.equal(text(viewed.stdout), `${sha256(view)}\n`);
  // A string with characters of 1 to 4 bytes comes back as its UTF-8 encoding.
  const string = "plain é € 😀 中文\n\u0000end";
  const echoed = await sandbox.runtime.exec({ command: "cat", input: string });
  assert.deepEqual(Buffer.from(echoed.stdout), Buffer.from(string, "utf8"));
  // Empty input: stdin is attached and closed at once.
  const empty = await sandbox.runtime.exec({ command: "wc", args: ["-c"], input: "" });
  assert.equal(text(empty.stdout).trim(), "0");
  const emptyBytes = await sandbox.runtime.exec({ command: "cat", input: new Uint8Array(0) });
  assert.equal(emptyBytes.exitCode, 0);
  assert.equal(emptyBytes.stdout.byteLength, 0);
  // No input: stdin is not attached, so a reader sees end of file at once.
  const started = Date.now();
  const none = await sandbox.runtime.exec({ command: "cat", timeoutMs: 5000 });
  assert.equal(none.status, "exited");
  assert.equal(none.exitCode, 0);
  assert.equal(none.stdout.byteLength, 0);
  assert.ok(Date.now() - started < 4000, "cat without input did not end");
});

test("a command that never reads its 8 MiB of stdin completes without deadlock", async () => {
  const input = randomBytes(8 * MiB);
  for (const [args, code] of [
    [["true"], 0],
    [["sh", "-c", "echo ignored; exit 3"], 3],
  ]) {
    const started = Date.now();
    const result = await sandbox.runtime.exec({ command: args[0], args: args.slice(1), input, timeoutMs: 20_000 });
    const elapsed = Date.now() - started;
    assert.equal(result.status, "exited", `${args.join(" ")} did not exit (deadlock?) after ${elapsed} ms`);
    assert.equal(result.exitCode, code);
  }
});

test("bytes stay bytes: output that is not UTF-8 comes back exactly", async () => {
  const result = await sandbox.runtime.exec({
    command: "sh",
    args: ["-c", "printf '\\377\\376\\000\\200\\300abc\\342\\202'; printf '\\355\\240\\200\\000\\377' >&2"],
  });
  assert.equal(result.exitCode, 0, text(result.stderr));
  assert.deepEqual([...result.stdout], [0xff, 0xfe, 0x00, 0x80, 0xc0, 0x61, 0x62, 0x63, 0xe2, 0x82]);
  assert.deepEqual([...result.stderr], [0xed, 0xa0, 0x80, 0x00, 0xff]);
  // Every byte value, through a file written from inside the container.
  const all = await sandbox.runtime.exec({
    command: "sh",
    args: ["-c", "i=0; while [ $i -lt 256 ]; do printf \"\\\\$(printf %o $i)\"; i=$((i+1)); done"],
  });
  assert.deepEqual([...all.stdout], Array.from({ length: 256 }, (_, i) => i));
});

test("maxOutputBytes keeps the first N bytes of each stream and flags only the stream that went over", async () => {
  // runtime.maxOutputBytes is 1000 on `limited`.
  const data = randomBytes(3000);
  await limited.runtime.writeFile({ path: "data.bin", data });
  const run = (outBytes, errBytes) =>
    limited.runtime.exec({ command: "sh", args: ["-c", `head -c ${outBytes} data.bin; head -c ${errBytes} data.bin >&2`] });
  const cases = [
    // [stdout bytes, stderr bytes, stdoutTruncated, stderrTruncated]
    [1000, 0, false, false],
    [1001, 0, true, false],
    [0, 1000, false, false],
    [0, 1001, false, true],
    [1000, 1001, false, true],
    [1001, 1000, true, false],
    [3000, 3000, true, true],
    [999, 999, false, false],
  ];
  for (const [outBytes, errBytes, outTruncated, errTruncated] of cases) {
    const result = await run(outBytes, errBytes);
    const label = `stdout ${outBytes}, stderr ${errBytes}`;
    assert.equal(result.status, "exited", label);
    assert.equal(result.exitCode, 0, label);
    assert.equal(result.stdoutTruncated, outTruncated, label);
    assert.equal(result.stderrTruncated, errTruncated, label);
    assert.deepEqual(Buffer.from(result.stdout), data.subarray(0, Math.min(outBytes, 1000)), label);
    assert.deepEqual(Buffer.from(result.stderr), data.subarray(0, Math.min(errBytes, 1000)), label);
  }
  // Far more than the limit: the command is not blocked, the rest is dropped.
  const flood = await limited.runtime.exec({ command: "sh", args: ["-c", "head -c 20000000 /dev/zero; echo done >&2"], timeoutMs: 30_000 });
  assert.equal(flood.status, "exited");
  assert.equal(flood.exitCode, 0);
  assert.equal(flood.stdoutTruncated, true);
  assert.deepEqual(Buffer.from(flood.stdout), Buffer.alloc(1000));
  assert.equal(text(flood.stderr), "done\n");
  assert.equal(flood.stderrTruncated, false);
});

test("the default maxOutputBytes is 1 MiB", async () => {
  const exact = await sandbox.runtime.exec({ command: "head", args: ["-c", String(MiB), "/dev/zero"] });
  assert.equal(exact.stdout.byteLength, MiB);
  assert.equal(exact.stdoutTruncated, false);
  const over = await sandbox.runtime.exec({ command: "head", args: ["-c", String(MiB + 1), "/dev/zero"] });
  assert.equal(over.stdout.byteLength, MiB);
  assert.equal(over.stdoutTruncated, true);
});

test("timeout: status timed_out without exitCode, output so far kept, the command and its children gone", async () => {
  const started = Date.now();
  const result = await sandbox.runtime.exec({
    command: "sh",
    args: ["-c", "echo before; echo warn >&2; sleep 3001 & sleep 3002 & wait"],
    timeoutMs: 1500,
  });
  const elapsed = Date.now() - started;
  assert.equal(result.status, "timed_out");
  assert.equal(Object.hasOwn(result, "exitCode"), false, "a timed out result has no exitCode");
  assert.deepEqual(Object.keys(result).sort(), ["durationMs", "status", "stderr", "stdout", "stderrTruncated", "stdoutTruncated"].sort());
  assert.equal(text(result.stdout), "before\n");
  assert.equal(text(result.stderr), "warn\n");
  assert.equal(result.stdoutTruncated, false);
  assert.ok(result.durationMs >= 1500, `durationMs ${result.durationMs}`);
  assert.ok(elapsed >= 1500, `took ${elapsed} ms`);
  // Gone when the promise settles: no polling.
  const listing = await processes();
  assert.doesNotMatch(listing, /sleep 300[12]/, listing);
});

test("the default timeout comes from runtime.commandTimeoutMs; timeoutMs overrides it", async () => {
  // runtime.commandTimeoutMs is 1000 on `limited`.
  const started = Date.now();
  const result = await limited.runtime.exec({ command: "sleep", args: ["3010"] });
  const elapsed = Date.now() - started;
  assert.equal(result.status, "timed_out");
  assert.ok(elapsed >= 1000, `took ${elapsed} ms`);
  const listing = await processes(`anvia-sandbox-${limited.id}`);
  assert.doesNotMatch(listing, /sleep 3010/, listing);
  const longer = await limited.runtime.exec({ command: "sh", args: ["-c", "sleep 1.5; echo finished"], timeoutMs: 8000 });
  assert.equal(longer.status, "exited");
  assert.equal(longer.exitCode, 0);
  assert.equal(text(longer.stdout), "finished\n");
});

test("abort mid-run rejects promptly with the signal's reason and ends the whole process tree", async (t) => {
  const controller = new AbortController();
  const reason = new Error("caller gave up");
  const pending = sandbox.runtime.exec({
    command: "sh",
    args: ["-c", "sleep 3003 & sleep 3004 & wait"],
    abortSignal: controller.signal,
  });
  let settledAt;
  const outcome = pending.then(
    (value) => ({ value }),
    (error) => ({ error }),
  ).finally(() => {
    settledAt = performance.now();
  });
  await waitUntilRunning(/sleep 3004/);
  const abortedAt = performance.now();
  controller.abort(reason);
  assert.ok(await settledWithinATurn(() => settledAt !== undefined), "the abort's rejection waited for I/O");
  const { error, value } = await outcome;
  assert.equal(value, undefined, "the exec resolved instead of rejecting");
  assert.equal(error, reason, "rejects with the very reason object");
  const latency = settledAt - abortedAt;
  t.diagnostic(`rejected ${latency.toFixed(1)} ms after abort`);
  const listing = await waitUntilGone(/sleep 300[34]/);
  t.diagnostic(`processes gone ${listing.elapsed} ms later`);
  assert.doesNotMatch(listing.listing, /sleep 300[34]/, listing.listing);
});

test("an already aborted signal rejects with its reason and runs nothing", async () => {
  const reason = new Error("aborted before start");
  await assert.rejects(
    sandbox.runtime.exec({ command: "touch", args: ["/tmp/aborted-marker-1"], abortSignal: AbortSignal.abort(reason) }),
    (error) => error === reason,
  );
  const defaultReason = AbortSignal.abort();
  await assert.rejects(
    sandbox.runtime.exec({ command: "touch", args: ["/tmp/aborted-marker-2"], abortSignal: defaultReason }),
    (error) => error === defaultReason.reason && error.name === "AbortError",
  );
  const check = await dockerExec(container, ["sh", "-c", "for f in /tmp/aborted-marker-*; do [ ! -e \"$f\" ] || echo \"$f\"; done | wc -l"]);
  assert.equal(check.stdout.trim(), "0");
});

test("64 concurrent execs all complete with their own output while the JS thread stays responsive", async (t) => {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  let maxGap = 0;
  let last = performance.now();
  const ticker = setInterval(() => {
    const now = performance.now();
    maxGap = Math.max(maxGap, now - last);
    last = now;
  }, 10);
  // Turns of the event loop while the execs are in flight, counted by events (a
  // setImmediate chain), not timed: a thread that waited on the engine or the agent inside
  // a call would settle calls before its first turn, and turn far less than once a call.
  let turns = 0;
  let turnsAtFirstSettle;
  let spinning = true;
  const spin = () => {
    if (!spinning) return;
    turns++;
    setImmediate(spin);
  };
  histogram.enable();
  let results;
  try {
    const calls = Array.from({ length: 64 }, (_, i) =>
      sandbox.runtime
        .exec({
          command: "sh",
          args: ["-c", 'sleep 0.2; printf "%s" "$1"; printf "e%s" "$1" >&2; exit $(($1 % 7))', "sh", String(i)],
          env: { INDEX: String(i) },
        })
        .finally(() => (turnsAtFirstSettle ??= turns)),
    );
    setImmediate(spin);
    results = await Promise.all(calls);
  } finally {
    spinning = false;
    histogram.disable();
    clearInterval(ticker);
  }
  results.forEach((result, i) => {
    assert.equal(result.status, "exited", `exec ${i}`);
    assert.equal(result.exitCode, i % 7, `exec ${i}`);
    assert.equal(text(result.stdout), String(i), `exec ${i}`);
    assert.equal(text(result.stderr), `e${i}`, `exec ${i}`);
  });
  const p99 = histogram.percentile(99) / 1e6;
  t.diagnostic(`event loop delay p99 ${p99.toFixed(1)} ms, max ${(histogram.max / 1e6).toFixed(1)} ms; longest 10 ms interval gap ${maxGap.toFixed(1)} ms; ${turns} turns`);
  // How long a turn takes depends on the machine (the figures above are diagnostics; the
  // bench measures latency); that the thread turns while the calls run does not.
  assert.ok(turnsAtFirstSettle > 0, "the first exec settled before the event loop turned once");
  assert.ok(turns >= results.length, `${turns} turns of the event loop while 64 execs ran`);
});

test("validation: the original's messages, as rejections, in the original's order", async () => {
  const rt = sandbox.runtime;
  const cases = [
    [undefined, TypeError, "options must be an object."],
    [null, TypeError, "options must be an object."],
    [[], TypeError, "options must be an object."],
    ["ls", TypeError, "options must be an object."],
    [{}, TypeError, "command must be a non-empty string."],
    [{ command: "" }, TypeError, "command must be a non-empty string."],
    [{ command: 5 }, TypeError, "command must be a non-empty string."],
    [{ command: "ls", args: "-l" }, TypeError, "args must contain only strings."],
    [{ command: "ls", args: ["-l", 1] }, TypeError, "args must contain only strings."],
    [{ command: "ls", args: [undefined] }, TypeError, "args must contain only strings."],
    [{ command: "ls", env: "A=1" }, TypeError, "env must be an object."],
    [{ command: "ls", env: ["A=1"] }, TypeError, "env must be an object."],
    [{ command: "ls", env: null }, TypeError, "env must be an object."],
    [{ command: "ls", env: { A: 1 } }, TypeError, "env.A must be a string."],
    [{ command: "ls", env: { "1A": "x" } }, TypeError, "Invalid environment variable name: 1A"],
    [{ command: "ls", env: { "A=B": "x" } }, TypeError, "Invalid environment variable name: A=B"],
    [{ command: "ls", env: { "": "x" } }, TypeError, "Invalid environment variable name: "],
    [{ command: "ls", timeoutMs: 0 }, RangeError, "timeoutMs must be a positive safe integer."],
    [{ command: "ls", timeoutMs: -5 }, RangeError, "timeoutMs must be a positive safe integer."],
    [{ command: "ls", timeoutMs: 1.5 }, RangeError, "timeoutMs must be a positive safe integer."],
    [{ command: "ls", timeoutMs: Number.NaN }, RangeError, "timeoutMs must be a positive safe integer."],
    [{ command: "ls", timeoutMs: 2 ** 53 }, RangeError, "timeoutMs must be a positive safe integer."],
    [{ command: "ls", timeoutMs: "100" }, RangeError, "timeoutMs must be a positive safe integer."],
    [{ command: "ls", input: 5 }, TypeError, "input must be a string or Uint8Array."],
    [{ command: "ls", input: new ArrayBuffer(4) }, TypeError, "input must be a string or Uint8Array."],
    [{ command: "ls", input: [1, 2] }, TypeError, "input must be a string or Uint8Array."],
    [{ command: "ls", input: null }, TypeError, "input must be a string or Uint8Array."],
    // The original's order: command, args, cwd, env, timeoutMs, input.
    [{ command: "", args: [1] }, TypeError, "command must be a non-empty string."],
    [{ command: "ls", args: [1], env: { A: 1 } }, TypeError, "args must contain only strings."],
    [{ command: "ls", cwd: "..", env: { A: 1 } }, DockerSandboxError, "Sandbox path cannot leave the workspace: .."],
    [{ command: "ls", env: { A: 1 }, timeoutMs: 0 }, TypeError, "env.A must be a string."],
    [{ command: "ls", timeoutMs: 0, input: 5 }, RangeError, "timeoutMs must be a positive safe integer."],
  ];
  for (const [options, type, message] of cases) {
    let promise;
    assert.doesNotThrow(() => {
      promise = rt.exec(options);
    }, `exec(${JSON.stringify(options)}) threw synchronously`);
    await assert.rejects(promise, (error) => {
      assert.ok(error instanceof type, `${JSON.stringify(options)}: ${error}`);
      assert.equal(error.message, message, JSON.stringify(options));
      return true;
    });
  }
  // undefined optional fields are the same as absent ones.
  const ok = await rt.exec({ command: "true", args: undefined, cwd: undefined, env: undefined, timeoutMs: undefined, input: undefined, abortSignal: undefined });
  assert.equal(ok.exitCode, 0);
});

test("a stopped or destroyed sandbox refuses every runtime call with invalid_state", async (t) => {
  const other = await client.createSandbox(baseOptions());
  t.after(() => other.destroy());
  const rt = other.runtime;
  // An exec in flight when stop begins is cancelled with the stop's reason.
  const inflight = rt.exec({ command: "sleep", args: ["3020"] });
  const settled = inflight.then(
    () => undefined,
    (error) => error,
  );
  await waitUntilRunning(/sleep 3020/, `anvia-sandbox-${other.id}`);
  await other.stop();
  const inflightError = await settled;
  assert.ok(inflightError instanceof DockerSandboxError, String(inflightError));
  assert.equal(inflightError.code, "invalid_state");
  assert.equal(inflightError.message, "Sandbox is stopping.");

  for (const state of ["stopped", "destroyed"]) {
    if (state === "destroyed") await other.destroy();
    const expected = (error) => {
      assert.ok(error instanceof DockerSandboxError, `${state}: ${error}`);
      assert.equal(error.code, "invalid_state");
      assert.equal(error.message, `Sandbox ${other.id} is not running (${state}).`);
      assert.deepEqual(error.details, { state });
      return true;
    };
    await assert.rejects(rt.exec({ command: "true" }), expected);
    await assert.rejects(rt.execStream({ command: "true" }).next(), expected);
    await assert.rejects(rt.readFile({ path: "x" }), expected);
    await assert.rejects(rt.readTextFile({ path: "x" }), expected);
    await assert.rejects(rt.readTextFilePage({ path: "x" }), expected);
    await assert.rejects(rt.writeFile({ path: "x", data: new Uint8Array(1) }), expected);
    await assert.rejects(rt.writeTextFile({ path: "x", text: "x" }), expected);
    await assert.rejects(rt.listFiles(), expected);
    // Validation comes before the state check, as in the original.
    await assert.rejects(rt.exec({ command: "" }), { name: "TypeError", message: "command must be a non-empty string." });
    await assert.rejects(rt.readFile({ path: "../x" }), { code: "invalid_path" });
  }
});
