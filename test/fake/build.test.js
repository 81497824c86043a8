// The image build of `anvia-sandbox create-image` against the fake engine: what goes out
// (POST /build as `docker build --tag` sends it, the context a tar streamed chunked, only
// the named regular files, owned by root), how the reply is read (printed as it arrives,
// split anywhere, an error inside a 200 reply failing the build and dropping the rest, a
// reply cut or refused, a line over the bound, an engine that is not there, an abort, a
// reply faster than its reader), on Docker's and on Podman's API, and the command around it
// (bin/anvia-sandbox.js in a child process, DOCKER_HOST pointing at the fake).
import test from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { HANG_MS, chunked, expectCode, head, parseTar, startFakeEngine, until } from "../helpers/fake-engine.js";
import { buildImage } from "../../lib/cli/build.js";
import { runCommand } from "../helpers/cli-scenarios.js";

const T = { timeout: HANG_MS };
const bin = fileURLToPath(new URL("../../bin/anvia-sandbox.js", import.meta.url));
const line = (o) => `${JSON.stringify(o)}\r\n`;
const streamHead = () => head(200, { "Content-Type": "application/json", "Transfer-Encoding": "chunked" });
const CONTEXT_LINE = /^Sending build context to Docker daemon +[0-9.]+kB\r\r\n/;

async function setup(t, { podman = false } = {}) {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  if (podman) {
    fake.route("GET", "/_ping", (req, res) =>
      res.send(200, "OK", { "API-Version": "1.41", "Libpod-Api-Version": "4.3.1", Server: "Libpod/4.3.1 (linux)" }),
    );
  }
  const dir = mkdtempSync(join(tmpdir(), "anvia-build-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, "Dockerfile"), "FROM base:1\nRUN true\n");
  writeFileSync(join(dir, ".dockerignore"), "**\n!Dockerfile\n!.dockerignore\n", { mode: 0o600 });
  writeFileSync(join(dir, "notes.txt"), "not sent");
  const out = { stdout: [], stderr: [] };
  const io = { stdout: (c) => out.stdout.push(Buffer.from(c)), stderr: (c) => out.stderr.push(Buffer.from(c)) };
  const text = (k) => Buffer.concat(out[k]).toString("utf8");
  const build = (extra = {}) => buildImage({ contextPath: dir, tag: "reg.local:5000/team/img:v1", files: ["Dockerfile", ".dockerignore"], io, host: fake.host, ...extra });
  return { fake, dir, out, io, text, build };
}

// A reply streamed as the engine streams it: the head, then each piece as its own chunk.
function streamed(pieces, { then = "end", split } = {}) {
  return async (req, res) => {
    await res.write(streamHead());
    for (const p of pieces) await res.writeSplit(chunked(p, Infinity, false), split);
    if (then === "end") await res.write("0\r\n\r\n");
    if (then === "destroy") return res.destroy();
    res.done();
  };
}

test("the request is `docker build --tag`'s: the query, a chunked tar of the named files only, owned by root", T, async (t) => {
  const { fake, build, text } = await setup(t);
  const result = await build();
  assert.match(result.imageId, /^sha256:b{64}$/);
  const [req] = fake.seen("POST", "/build");
  assert.equal(req.method, "POST");
  assert.equal(req.apiVersion, "1.41");
  assert.deepEqual(req.query, { dockerfile: "Dockerfile", t: "reg.local:5000/team/img:v1", version: "1" });
  assert.equal(req.headers["content-type"], "application/x-tar");
  assert.match(req.headers["transfer-encoding"], /chunked/);
  const entries = parseTar(req.body);
  assert.deepEqual(
    entries.map((e) => [e.name, e.type, e.mode, e.uid, e.gid, e.content.toString()]),
    [
      ["Dockerfile", "0", 0o644, 0, 0, "FROM base:1\nRUN true\n"],
      [".dockerignore", "0", 0o600, 0, 0, "**\n!Dockerfile\n!.dockerignore\n"],
    ],
  );
  // The fake's default build: a step a Dockerfile line, the id, the tag.
  const shown = text("stdout");
  assert.match(shown, CONTEXT_LINE);
  assert.equal(
    shown.replace(CONTEXT_LINE, ""),
    `Step 1/2 : FROM base:1\n ---> 000000000000\nStep 2/2 : RUN true\n ---> 000000000001\nSuccessfully built bbbbbbbbbbbb\nSuccessfully tagged reg.local:5000/team/img:v1\n`,
  );
  assert.equal(text("stderr"), "");
});

test("the reply is printed as it arrives, split anywhere, and nothing of a progress update", T, async (t) => {
  const { fake, build, text, out } = await setup(t);
  const body = [
    line({ stream: "Step 1/1 : FROM base:1\n" }),
    line({ status: "Pulling from library/base", id: "1" }),
    line({ status: "Downloading", progressDetail: { current: 5, total: 10 }, id: "layer" }),
    line({ status: "Pull complete", progressDetail: {}, id: "layer" }),
    line({ aux: { ID: "sha256:feed" } }),
    line({ stream: "Successfully built feed\n" }),
  ].join("");
  fake.route("POST", "/build", streamed([body], { split: 1 }));
  const r = await build();
  assert.equal(r.imageId, "sha256:feed");
  assert.equal(text("stdout").replace(CONTEXT_LINE, ""), "Step 1/1 : FROM base:1\n1: Pulling from library/base\nlayer: Pull complete\nSuccessfully built feed\n");

  // While the build runs, what came so far is already out.
  let release;
  const gate = new Promise((r) => (release = r));
  fake.route("POST", "/build", async (req, res) => {
    await res.write(streamHead());
    await res.write(chunked(line({ stream: "first\n" }), Infinity, false));
    await gate;
    await res.write(chunked(line({ stream: "second\n" }), Infinity, false));
    await res.write("0\r\n\r\n");
    res.done();
  });
  out.stdout.length = 0;
  const running = build();
  await until(() => text("stdout").includes("first\n"));
  assert.doesNotMatch(text("stdout"), /second/);
  release();
  await running;
  assert.match(text("stdout"), /first\nsecond\n$/);
});

test("an error inside a 200 reply fails the build, says the engine's words on stderr, and the rest is not read", T, async (t) => {
  const { fake, build, text, dir } = await setup(t);
  let closed = false;
  fake.route("POST", "/build", async (req, res) => {
    await res.write(streamHead());
    await res.write(chunked(line({ stream: "Step 2/2 : RUN false\n" }) + line({ errorDetail: { code: 1, message: "The command '/bin/sh -c false' returned a non-zero code: 1" }, error: "x" }), Infinity, false));
    // Keep talking: the client must drop the connection instead of reading on.
    for (let i = 0; i < 2000 && !res.destroyed; i++) {
      if (!(await res.write(chunked(line({ stream: `after ${i}\n` }), Infinity, false)))) break;
      await new Promise((r) => setImmediate(r));
    }
    closed = res.destroyed || res.socket.writableEnded || res.socket.readableEnded;
    res.done();
  });
  const error = await expectCode(build(), "docker_command_failed", new RegExp(`^Docker command failed: docker build --tag reg\\.local:5000/team/img:v1 ${dir.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`));
  assert.equal(error.cause.message, "The command '/bin/sh -c false' returned a non-zero code: 1");
  assert.equal(error.cause.code, "docker_command_failed");
  assert.equal(text("stderr"), "The command '/bin/sh -c false' returned a non-zero code: 1\n");
  assert.doesNotMatch(text("stdout"), /after/);
  await until(() => closed);

  // An "error" without "errorDetail" fails too.
  fake.route("POST", "/build", streamed([line({ stream: "ok\n" }), line({ error: "bare error" }), line({ stream: "more\n" })]));
  const second = await expectCode(build(), "docker_command_failed");
  assert.equal(second.cause.message, "bare error");
});

test("a refused, cut or unreadable reply, and an engine that is not there", T, async (t) => {
  const { fake, build, text } = await setup(t);
  fake.route("POST", "/build", { status: 500, json: { message: "dockerfile parse error line 1: unknown instruction: FORM" } });
  let e = await expectCode(build(), "docker_command_failed");
  assert.match(e.cause.message, /^Docker engine request failed: POST \/build\?dockerfile=Dockerfile&t=reg\.local%3A5000%2Fteam%2Fimg%3Av1&version=1 \(500\): dockerfile parse error line 1: unknown instruction: FORM$/);
  assert.match(text("stderr"), /unknown instruction: FORM\n$/);

  fake.route("POST", "/build", streamed([line({ stream: "Step 1/2 : FROM base:1\n" })], { then: "destroy" }));
  e = await expectCode(build(), "docker_command_failed");
  assert.match(e.cause.message, /connection failed/);

  fake.route("POST", "/build", streamed([line({ stream: "ok\n" }), "{not json\n"]));
  e = await expectCode(build(), "docker_command_failed");
  assert.match(e.cause.message, /^Docker engine sent a malformed build message: /);

  fake.route("POST", "/build", streamed([`{"stream":"${"x".repeat(1024 * 1024)}`, `"}\n`]));
  e = await expectCode(build(), "docker_command_failed");
  assert.equal(e.cause.message, "Docker engine sent a build message over 1048576 bytes.");

  const goneDir = mkdtempSync(join(tmpdir(), "anvia-gone-"));
  t.after(() => rmSync(goneDir, { recursive: true, force: true }));
  const gone = join(goneDir, "docker.sock");
  e = await expectCode(build({ host: `unix://${gone}` }), "docker_command_failed");
  assert.equal(e.cause.code, "docker_unavailable");
  assert.match(e.cause.message, /^Docker engine is not reachable at unix:\/\//);
});

test("a reply faster than its reader is delivered whole and in order", T, async (t) => {
  const { fake, build, out } = await setup(t);
  const pieces = [];
  for (let i = 0; i < 40; i++) pieces.push(Array.from({ length: 500 }, (_, k) => line({ stream: `${i}:${k}:${"y".repeat(200)}\n` })).join(""));
  fake.route("POST", "/build", streamed(pieces));
  await build();
  const got = Buffer.concat(out.stdout).toString("utf8").replace(CONTEXT_LINE, "").split("\n").filter(Boolean);
  assert.equal(got.length, 40 * 500);
  assert.equal(got[0].slice(0, 4), "0:0:");
  assert.equal(got.at(-1).slice(0, 8), "39:499:y");
});

test("an abort ends the build at once and rejects with the signal's reason", T, async (t) => {
  const { fake, build } = await setup(t);
  fake.route("POST", "/build", async (req, res) => {
    await res.write(streamHead());
    await res.write(chunked(line({ stream: "working\n" }), Infinity, false));
    res.hang();
  });
  const controller = new AbortController();
  const running = build({ abortSignal: controller.signal });
  await fake.waitFor("POST", "/build");
  const reason = new Error("stop");
  controller.abort(reason);
  await assert.rejects(running, (e) => e === reason);
});

test("only plain regular files of the directory are sent: links, FIFOs, large files, odd names refused before any request", T, async (t) => {
  const { fake, dir, build } = await setup(t);
  symlinkSync("Dockerfile", join(dir, "link"));
  execFileSync("mkfifo", [join(dir, "fifo")]);
  writeFileSync(join(dir, "big"), Buffer.alloc(1024 * 1024 + 1));
  writeFileSync(join(dir, "fits"), Buffer.alloc(1024 * 1024));
  mkdirSync(join(dir, "sub"));
  const refused = async (files, code, message, contextPath = dir) => {
    const e = await expectCode(build({ files, contextPath }), "docker_command_failed");
    assert.equal(e.cause.code, code, e.cause.message);
    assert.match(e.cause.message, message);
  };
  await refused(["Dockerfile", "link"], "invalid_path", /^Refusing to read through symlink: .*\/link$/);
  await refused(["fifo"], "invalid_path", /^Build context file is not a regular file: .*\/fifo$/);
  await refused(["sub"], "invalid_path", /^Build context file is not a regular file: .*\/sub$/);
  await refused(["big"], "file_too_large", /^Build context file exceeds 1048576 bytes: .*\/big$/);
  await refused(["missing"], "invalid_path", /^Unable to read build context file .*\/missing: No such file or directory$/);
  for (const name of ["../etc/passwd", "a/b", ".", "..", ""]) await refused([name], "invalid_path", /^Build context file name must be a plain file name: /);
  await refused(Array.from({ length: 17 }, () => "Dockerfile"), "invalid_path", /^A build context holds at most 16 files \(got 17\)\.$/);
  await refused(["Dockerfile", "Dockerfile"], "invalid_path", /^Build context file is named twice: Dockerfile$/);
  const linked = `${dir}-link`;
  symlinkSync(dir, linked);
  t.after(() => rmSync(linked, { force: true }));
  await refused(["Dockerfile"], "invalid_path", /^Refusing to read through symlink: /, linked);
  assert.equal(fake.seen("POST", "/build").length, 0);
  // At the bound it goes.
  await build({ files: ["fits"] });
  assert.equal(parseTar(fake.seen("POST", "/build")[0].body)[0].size, 1024 * 1024);
});

test("Podman's API: the same request, its STEP lines printed as they come", T, async (t) => {
  const { fake, build, text } = await setup(t, { podman: true });
  fake.route(
    "POST",
    "/build",
    streamed([line({ stream: "STEP 1/2: FROM base:1\n" }), line({ stream: "STEP 2/2: RUN true\n" }), line({ stream: "COMMIT reg.local:5000/team/img:v1\n" }), line({ aux: { ID: "sha256:0123" } }), line({ stream: "Successfully tagged reg.local:5000/team/img:v1\n" })]),
  );
  const r = await build();
  assert.equal(r.imageId, "sha256:0123");
  assert.equal(fake.seen("POST", "/build")[0].query.version, "1");
  assert.match(text("stdout"), /STEP 1\/2: FROM base:1\nSTEP 2\/2: RUN true\nCOMMIT reg\.local:5000\/team\/img:v1\nSuccessfully tagged reg\.local:5000\/team\/img:v1\n$/);
});

test("the command end to end: DOCKER_HOST names the engine, the build's output and the original's lines around it", T, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  const cwd = mkdtempSync(join(tmpdir(), "anvia-build-cli-"));
  t.after(() => rmSync(cwd, { recursive: true, force: true }));
  const env = { ...process.env, DOCKER_HOST: fake.host };
  const ok = await runCommand([process.execPath, bin], ["create-image", "--name", "fake", "--runtime", "node"], { cwd, env });
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(ok.stderr, "");
  assert.match(ok.stdout, /^Created \.anvia\/sandbox-images\/fake\nSending build context to Docker daemon +[0-9.]+kB\r\r\nStep 1\/9 : FROM node:24\.18\.0-bookworm-slim AS node-runtime\n/);
  assert.match(ok.stdout, /Successfully tagged anvia-sandbox-fake:latest\nBuilt anvia-sandbox-fake:latest\n\nUse with @anvia\/sandbox:\n/);
  const sent = parseTar(fake.seen("POST", "/build")[0].body).map((e) => e.name);
  assert.deepEqual(sent, [".dockerignore", "Dockerfile", "anvia-sandbox.json"]);

  fake.route("POST", "/build", streamed([line({ stream: "Step 1/9 : FROM node\n" }), line({ errorDetail: { message: "pull access denied" }, error: "pull access denied" })]));
  const failed = await runCommand([process.execPath, bin], ["create-image", "--name", "fake", "--runtime", "node", "--force", "--docker-path", "/no/such/docker"], { cwd, env });
  assert.equal(failed.code, 1);
  assert.equal(failed.stderr, `pull access denied\nDocker command failed: docker build --tag anvia-sandbox-fake:latest ${join(cwd, ".anvia/sandbox-images/fake")}\n`);
  assert.doesNotMatch(failed.stdout, /Use with @anvia\/sandbox/);
});
