// Engine replies the client must parse, gone wrong: error statuses with and without a JSON
// body, malformed and truncated JSON, replies split into single bytes, oversized replies.
import test from "node:test";
import assert from "node:assert/strict";
import {
  HANG_MS,
  DockerSandboxClient,
  chunked,
  expectCode,
  fakeSandbox,
  head,
  jsonReply,
  notKiller,
  reply,
  sandboxLabels,
  startFakeEngine,
  mib,
} from "../helpers/fake-engine.js";

const T = { timeout: HANG_MS }; // a hang fails after minutes; no test races a timer

// ---- HTTP 500 ------------------------------------------------------------------------------------

test("exec create answered 500 with a JSON message: the message is in the error and its details", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/containers/:name/exec", { status: 500, json: { message: "engine exploded: disk full" } });
  const err = await expectCode(runtime.exec({ command: "echo", args: ["x"] }), "docker_command_failed", /engine exploded: disk full/);
  assert.equal(err.details.statusCode, 500);
  assert.equal(err.details.message, "engine exploded: disk full");
});

test("exec create answered 500 with a plain-text body: the text is the message", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/containers/:name/exec", {
    status: 500,
    body: "plain text failure\n",
    headers: { "Content-Type": "text/plain; charset=utf-8" },
  });
  const err = await expectCode(runtime.exec({ command: "echo" }), "docker_command_failed", /plain text failure/);
  assert.equal(err.details.statusCode, 500);
  assert.equal(err.details.message, "plain text failure");
});

test("exec create answered 500 with an empty body", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/containers/:name/exec", { status: 500, body: "" });
  const err = await expectCode(runtime.exec({ command: "echo" }), "docker_command_failed", /\(500\)/);
  assert.equal(err.details.statusCode, 500);
  assert.equal(err.details.message, "");
});

test("exec create answered 500 with a JSON body that has no message: the body is the message", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/containers/:name/exec", { status: 500, json: { error: "something" } });
  const err = await expectCode(runtime.exec({ command: "echo" }), "docker_command_failed");
  assert.equal(err.details.statusCode, 500);
  assert.match(err.details.message, /something/);
});

test("container inspect on resume answered 500: the original's message, the engine's in details", T, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  fake.route("GET", "/containers/:name/json", { status: 500, json: { message: "inspect broke" } });
  const client = new DockerSandboxClient({ host: fake.host });
  const err = await expectCode(client.resumeSandbox({ id: "x1" }), "docker_command_failed", /Unable to inspect Docker sandbox/);
  assert.equal(err.details.statusCode, 500);
  assert.equal(err.details.message, "inspect broke");
});

test("readFile answered 500 with a JSON message", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("GET", "/containers/:name/archive", { status: 500, json: { message: "archive backend failed" } });
  const err = await expectCode(runtime.readFile({ path: "a.txt" }), "docker_command_failed", /archive backend failed/);
  assert.equal(err.details.statusCode, 500);
  assert.equal(err.details.message, "archive backend failed");
});

test("writeFile answered 500 with a JSON message", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("PUT", "/containers/:name/archive", { status: 500, json: { message: "no space left on device" } });
  const err = await expectCode(runtime.writeTextFile({ path: "a.txt", text: "x" }), "docker_command_failed", /no space left/);
  assert.equal(err.details.statusCode, 500);
  assert.equal(err.details.message, "no space left on device");
});

test("pullImage answered 500 with a JSON message", T, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  fake.route("POST", "/images/create", { status: 500, json: { message: "pull access denied for nope" } });
  const client = new DockerSandboxClient({ host: fake.host });
  const err = await expectCode(client.pullImage({ image: "nope:1" }), "docker_command_failed", /pull access denied for nope/);
  assert.equal(err.details.statusCode, 500);
  assert.equal(err.details.message, "pull access denied for nope");
});

// ---- malformed and truncated JSON -------------------------------------------------------------------

test("exec create with malformed JSON", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/containers/:name/exec", {
    raw: reply(201, '{"Id": "abc",,}', { "Content-Type": "application/json" }),
  });
  await expectCode(runtime.exec({ command: "echo" }), "docker_command_failed", /malformed JSON/);
  assert.equal(fake.seen("POST", /\/exec\/.*\/start/).length, 0, "no exec start after a bad create reply");
});

test("exec create with truncated JSON (complete HTTP body)", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/containers/:name/exec", { raw: reply(201, '{"Id":"ab', { "Content-Type": "application/json" }) });
  await expectCode(runtime.exec({ command: "echo" }), "docker_command_failed", /malformed JSON/);
});

test("exec create whose body is cut short of its Content-Length", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/containers/:name/exec", {
    raw: [head(201, { "Content-Type": "application/json", "Content-Length": 100 }), '{"Id":"ab'],
    then: "end",
  });
  await expectCode(runtime.exec({ command: "echo" }), "docker_command_failed", /connection failed/);
});

test("exec create with a JSON reply that has no Id", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/containers/:name/exec", { status: 201, json: { Id: 12 } });
  await expectCode(runtime.exec({ command: "echo" }), "docker_command_failed", /no exec id/);
});

test("exec create with an empty Id: no exec is started with it", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/containers/:name/exec", { status: 201, json: { Id: "" } });
  await expectCode(runtime.exec({ command: "echo" }), "docker_command_failed", /no exec id/);
  assert.equal(fake.requests.filter((r) => r.path.startsWith("/exec/")).length, 0);
});

test("container inspect on resume with malformed JSON", T, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  fake.addContainer("m1");
  fake.route("GET", "/containers/:name/json", { raw: reply(200, '{"Config": {"Labels": {', { "Content-Type": "application/json" }) });
  const client = new DockerSandboxClient({ host: fake.host });
  await expectCode(client.resumeSandbox({ id: "m1" }), "docker_command_failed", /invalid container metadata/);
  assert.equal(fake.seen("POST", "/start").length, 0, "not started after a bad inspection");
});

test("container inspect on resume cut mid-body (chunked, no last chunk)", T, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  const c = fake.addContainer("m2");
  const body = JSON.stringify(c);
  fake.route("GET", "/containers/:name/json", {
    raw: [head(200, { "Content-Type": "application/json", "Transfer-Encoding": "chunked" }), chunked(body.slice(0, 40), Infinity, false)],
    then: "destroy",
  });
  const client = new DockerSandboxClient({ host: fake.host });
  await expectCode(client.resumeSandbox({ id: "m2" }), "docker_command_failed");
});

test("exec inspect with malformed JSON", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("GET", "/exec/:id/json", notKiller({ raw: reply(200, '{"Running": false, "ExitCode": 0', { "Content-Type": "application/json" }) }));
  await expectCode(runtime.exec({ command: "echo", args: ["hi"] }), "docker_command_failed", /malformed JSON/);
});

test("exec inspect that never reports an exit code ends with an error, not a loop", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  let asked = 0;
  fake.route(
    "GET",
    "/exec/:id/json",
    notKiller((req, res) => {
      asked++;
      res.json(200, { Running: true, ExitCode: 0 });
    }),
  );
  const started = Date.now();
  await expectCode(runtime.exec({ command: "echo", args: ["hi"] }), "docker_command_failed", /did not report the exit code/);
  assert.ok(asked > 10, `asked ${asked} times`);
  // Not a loop: the inspections are bounded in number (hundreds), whatever each takes on
  // this machine, rather than in time. A hang fails on the test's own timeout.
  assert.ok(asked < 1000, `asked ${asked} times in ${Date.now() - started} ms`);
});

// ---- one byte at a time -------------------------------------------------------------------------------

function oneBytePerChunk(status, body) {
  return [head(status, { "Content-Type": "application/json", "Transfer-Encoding": "chunked" }), chunked(body, 1)];
}

test("container inspect on resume in chunked encoding, every byte its own write", T, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  const c = fake.addContainer("b1", { labels: { "anvia.sandbox.workdir": "/home/split" } });
  fake.route("GET", "/containers/:name/json", { raw: oneBytePerChunk(200, JSON.stringify(c)), split: 1, delayMs: 0 }, { times: 1 });
  const client = new DockerSandboxClient({ host: fake.host });
  const sandbox = await client.resumeSandbox({ id: "b1" });
  assert.equal(sandbox.runtime.workdir, "/home/split");
  assert.equal(fake.seen("POST", "/containers/anvia-sandbox-b1/start").length, 1);
});

test("exec create reply in chunked encoding, every byte its own write with a delay", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route(
    "POST",
    "/containers/:name/exec",
    async (req, res, ctx) => {
      // Let the default create the exec, but answer its JSON one byte per write.
      const id = `split${"0".repeat(59)}`;
      ctx.engine.state.execs.set(id, { id, container: req.params.name, body: req.json(), Running: false, ExitCode: null });
      await res.raw(oneBytePerChunk(201, JSON.stringify({ Id: id })), { split: 1, delayMs: 1 });
    },
    { times: 1 },
  );
  const result = await runtime.exec({ command: "echo", args: ["split", "ok"] });
  assert.equal(result.status, "exited");
  assert.equal(result.exitCode, 0);
  assert.equal(Buffer.from(result.stdout).toString(), "split ok\n");
});

// ---- bounds --------------------------------------------------------------------------------------------

test("a container inspection far over the reply bound is refused without buffering it all", T, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  const c = fake.addContainer("big1");
  const filler = "x".repeat(1024 * 1024);
  let written = 0;
  fake.route("GET", "/containers/:name/json", async (req, res) => {
    await res.write(head(200, { "Content-Type": "application/json", "Transfer-Encoding": "chunked" }));
    await res.write(chunked(`{"Config":${JSON.stringify(c.Config)},"State":{},"Pad":"`, Infinity, false));
    for (let i = 0; i < 64; i++) {
      if (!(await res.write(chunked(filler, Infinity, false)))) break;
      written += filler.length;
    }
    await res.write(chunked('"}'));
    res.done();
  });
  const client = new DockerSandboxClient({ host: fake.host });
  const before = process.memoryUsage().rss;
  await expectCode(client.resumeSandbox({ id: "big1" }), "docker_command_failed");
  const grown = mib(process.memoryUsage().rss - before);
  assert.ok(grown < 50, `rss grew ${grown.toFixed(1)} MiB`);
  assert.ok(written < 32 * 1024 * 1024, `the client read ${mib(written).toFixed(1)} MiB before giving up`);
});

test("a response header line far over curl's bound fails cleanly", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("POST", "/containers/:name/exec", {
    raw: jsonReply(201, { Id: "x" }, { "X-Huge": "h".repeat(300 * 1024) }),
  });
  await expectCode(runtime.exec({ command: "echo" }), "docker_command_failed");
});

test("labels on resume as the real ones: the sandbox comes back with their limits", T, async (t) => {
  // Control for the cases above: the unmodified fake resumes and runs a command.
  const { fake, runtime, sandbox } = await fakeSandbox(t, { id: "ctl", labels: { "anvia.sandbox.runtime.max-output-bytes": "4" } });
  assert.equal(sandbox.id, "ctl");
  assert.deepEqual(Object.keys(sandboxLabels("ctl")).length, 10);
  const r = await runtime.exec({ command: "echo", args: ["hello"] });
  assert.equal(Buffer.from(r.stdout).toString(), "hell");
  assert.equal(r.stdoutTruncated, true);
  assert.equal(fake.seen("GET", "/_ping").length, 1);
});
