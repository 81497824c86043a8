// The build message stream (src/codec/buildmsg.c, through native.buildStreamRender): what
// `anvia-sandbox create-image` prints while the engine builds, held against what
// `docker build` printed for the same replies (test/fixtures/create-image/docker-build.json),
// byte for byte, fed whole and one byte at a time; where this package differs on
// purpose (an "error" without "errorDetail" fails the build; an empty errorDetail keeps
// the error's text), the difference is pinned. Then the bounds: a line over 1 MiB, a
// malformed or non-object message, an oversized image id; and the context line's sizes.
process.env.TZ = "UTC"; // the docker CLI printed message times in UTC (before any time is formatted here)
import test from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { native } from "../helpers/native.js";

const fixture = JSON.parse(readFileSync(new URL("../fixtures/create-image/docker-build.json", import.meta.url), "utf8"));
const enc = (s) => Buffer.from(s, "utf8");
const text = (r) => Buffer.from(r.output).toString("utf8");
const render = (body, split) => {
  const b = enc(body);
  const chunks = split ? [...b].map((x) => Buffer.from([x])) : [b];
  return native.buildStreamRender(chunks);
};
// The docker CLI's lines of its own: the legacy builder's deprecation notice (stderr) and
// the context line (the first of stdout).
const dockerStderr = (s) => s.replace(/^DEPRECATED: The legacy builder[\s\S]*?\n\n/, "");
const contextLine = (bytes) => {
  const b = native.buildHumanSize(bytes);
  return `Sending build context to Docker daemon ${b.padStart(8)}\r\r\n`;
};

test("the docker CLI printed the same context line", () => {
  for (const c of fixture.cases) assert.ok(c.stdout.startsWith(contextLine(fixture.contextBytes)), c.name);
  assert.equal(contextLine(2048), "Sending build context to Docker daemon  2.048kB\r\r\n");
});

const DIFFERS = new Set(["error-only", "error-detail-empty"]);

test("every reply renders as docker build printed it, whole or split into single bytes", () => {
  for (const c of fixture.cases.filter((c) => !DIFFERS.has(c.name))) {
    assert.equal(c.terminalSame, true, `${c.name}: the docker CLI printed the same on a terminal`);
    const expected = c.stdout.slice(contextLine(fixture.contextBytes).length);
    for (const split of [false, true]) {
      const r = render(c.body, split);
      assert.equal(text(r), expected, `${c.name}${split ? " (bytes)" : ""}`);
      const err = dockerStderr(c.stderr);
      if (c.code === 0) {
        assert.equal(r.error, undefined, c.name);
      } else {
        assert.deepEqual(r.error, { message: err.replace(/\n$/, ""), code: "docker_command_failed" }, c.name);
      }
    }
  }
  assert.equal(render(fixture.cases.find((c) => c.name === "classic-build").body).imageId, `sha256:9f186be8701a${"0".repeat(52)}`);
  assert.equal(render(fixture.cases.find((c) => c.name === "aux-before-error").body).error, undefined);
});

test("an error without errorDetail fails the build (the docker CLI printed an empty line and went on)", () => {
  const c = fixture.cases.find((x) => x.name === "error-only");
  assert.equal(c.code, 0);
  assert.match(c.stdout, /before\n\nafter\n$/);
  const r = render(c.body);
  assert.equal(text(r), "before\n");
  assert.deepEqual(r.error, { message: "only the error field", code: "docker_command_failed" });
});

test("an empty errorDetail fails with the error's text (the docker CLI printed an empty message)", () => {
  const c = fixture.cases.find((x) => x.name === "error-detail-empty");
  assert.equal(c.code, 1);
  assert.equal(dockerStderr(c.stderr), "");
  const r = render(c.body);
  assert.equal(text(r), "before\n");
  assert.equal(r.error.message, "the error field");
  assert.equal(render('{"errorDetail":{}}\n').error.message, "The engine reported an error without a message.");
});

test("a line over 1 MiB, a malformed message or one that is not an object stops the stream", () => {
  const long = `{"stream":"${"x".repeat(1024 * 1024)}"}\n{"stream":"after"}\n`;
  for (const chunks of [[enc(long)], [enc(long.slice(0, 1000)), enc(long.slice(1000))]]) {
    const r = native.buildStreamRender(chunks);
    assert.equal(text(r), "");
    assert.equal(r.error.message, "Docker engine sent a build message over 1048576 bytes.");
  }
  const fits = `{"stream":"${"x".repeat(1024 * 1024 - 13)}"}\n`;
  assert.equal(Buffer.byteLength(fits), 1024 * 1024 + 1);
  assert.equal(render(fits).error, undefined);
  const cut = render('{"stream":"a\\n"}\n{"stream":"b\\n"\n{"stream":"c\\n"}\n');
  assert.equal(text(cut), "a\n");
  assert.match(cut.error.message, /^Docker engine sent a malformed build message: /);
  for (const body of ['"text"\n', "[1]\n", "42\n", "null\n"]) {
    assert.equal(render(`{"stream":"a"}\n${body}{"stream":"b"}\n`).error.message, "Docker engine sent a build message that is not a JSON object.", body);
  }
  // A reply cut inside its last message: the last piece is read at the end of the reply.
  assert.equal(text(render('{"stream":"a\\n"}\n{"stream":"b\\n"}')), "a\nb\n");
  assert.match(render('{"stream":"a\\n"}\n{"stre').error.message, /malformed/);
});

test("fields of the wrong type count as absent; NUL bytes pass through; an oversized image id is not kept", () => {
  assert.equal(text(render('{"stream":5,"status":"s","id":["x"]}\n')), "s\n");
  assert.equal(text(render('{"stream":"a\\u0000b\\n"}\n')), "a\u0000b\n");
  assert.equal(render(`{"aux":{"ID":"sha256:${"a".repeat(300)}"}}\n`).imageId, null);
  assert.equal(render('{"aux":{"ID":"sha256:ab"}}\n{"aux":{"ID":5}}\n').imageId, "sha256:ab");
  assert.equal(render('{"aux":null,"stream":"shown\\n"}\n').imageId, null);
  assert.equal(text(render('{"aux":null,"stream":"shown\\n"}\n')), "shown\n");
});

test("sizes as the docker CLI writes them (go-units HumanSize: 4 significant digits, powers of 1000)", () => {
  const cases = { 0: "0B", 1: "1B", 512: "512B", 999: "999B", 1000: "1kB", 2048: "2.048kB", 2560: "2.56kB", 3072: "3.072kB", 999999: "1000kB", 1000000: "1MB", 123456789: "123.5MB", 5e12: "5TB" };
  for (const [n, s] of Object.entries(cases)) assert.equal(native.buildHumanSize(Number(n)), s, n);
});
