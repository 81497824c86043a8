// The exec stream demultiplexer (src/frames.c) through native.demuxFrames: every split of
// the input, zero-length frames, payloads passed on in pieces, huge announced lengths,
// unknown stream types, the engine's system error frames and the callback's stop request.
import assert from "node:assert/strict";
import { test } from "node:test";

import { native } from "../helpers/native.js";

const enc = new TextEncoder();

function frame(stream, payload, announced) {
  const data = typeof payload === "string" ? enc.encode(payload) : payload;
  const out = new Uint8Array(8 + data.length);
  out[0] = stream;
  new DataView(out.buffer).setUint32(4, announced ?? data.length, false);
  out.set(data, 8);
  return out;
}

function concat(parts) {
  const total = parts.reduce((n, p) => n + p.length, 0);
  const out = new Uint8Array(total);
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

function text(result, stream) {
  return Buffer.concat(result.events.filter((e) => e.stream === stream).map((e) => e.data)).toString();
}

function splitAt(bytes, points) {
  const chunks = [];
  let prev = 0;
  for (const p of points) {
    chunks.push(bytes.subarray(prev, p));
    prev = p;
  }
  chunks.push(bytes.subarray(prev));
  return chunks;
}

const stream = concat([
  frame(1, "hello "),
  frame(2, "warn: "),
  frame(1, ""),
  frame(2, ""),
  frame(0, "stdin-as-stdout "),
  frame(1, "world"),
  frame(2, "done\n"),
]);

function assertStream(result) {
  assert.equal(result.error, undefined);
  assert.equal(result.finishError, undefined);
  assert.equal(text(result, 1), "hello stdin-as-stdout world");
  assert.equal(text(result, 2), "warn: done\n");
  assert.ok(result.events.every((e) => e.stream === 1 || e.stream === 2), "stream 0 is reported as stdout");
  assert.ok(result.events.every((e) => e.data.length > 0), "no empty events for empty frames");
}

test("a multi-frame stream in one chunk", () => {
  const result = native.demuxFrames([stream]);
  assertStream(result);
  assert.equal(result.events.length, 5);
});

test("a multi-frame stream split at every byte boundary", () => {
  for (let i = 0; i <= stream.length; i++) assertStream(native.demuxFrames(splitAt(stream, [i])));
});

test("a multi-frame stream split at every pair of byte boundaries", () => {
  for (let i = 0; i <= stream.length; i++) {
    for (let j = i; j <= stream.length; j++) assertStream(native.demuxFrames(splitAt(stream, [i, j])));
  }
});

test("a multi-frame stream fed one byte at a time", () => {
  const chunks = Array.from(stream, (b) => Uint8Array.of(b));
  const result = native.demuxFrames(chunks);
  assertStream(result);
  assert.ok(result.events.every((e) => e.data.length === 1), "payload bytes are passed on as they arrive");
});

test("empty input and empty chunks", () => {
  assert.deepEqual(native.demuxFrames([]), { events: [], stops: 0 });
  const result = native.demuxFrames([new Uint8Array(0), stream, new Uint8Array(0)]);
  assertStream(result);
});

test("only zero-length frames", () => {
  const result = native.demuxFrames([concat([frame(1, ""), frame(2, ""), frame(0, "")])]);
  assert.deepEqual(result, { events: [], stops: 0 });
});

test("a large payload is passed on in the pieces it arrives in, never buffered whole", () => {
  const payload = new Uint8Array(1 << 20).map((_, i) => i & 0xff);
  const bytes = frame(1, payload);
  const chunks = [];
  for (let off = 0; off < bytes.length; off += 1000) chunks.push(bytes.subarray(off, off + 1000));
  const result = native.demuxFrames(chunks);
  assert.equal(result.events.length, chunks.length);
  assert.ok(result.events.every((e) => e.data.length <= 1000));
  assert.deepEqual(Buffer.concat(result.events.map((e) => e.data)), Buffer.from(payload));
});

test("a frame announcing 4 GiB with a short payload: data passed on, cut reported at the end", () => {
  const payload = enc.encode("x".repeat(100));
  const before = process.memoryUsage().rss;
  const result = native.demuxFrames([frame(1, payload, 0xffffffff)]);
  assert.ok(process.memoryUsage().rss - before < 256 * 1024 * 1024, "no allocation for the announced length");
  assert.equal(result.error, undefined);
  assert.equal(text(result, 1), "x".repeat(100));
  assert.deepEqual(result.finishError, {
    message: "Docker engine ended the exec stream inside a frame (4294967195 payload bytes missing).",
    code: "docker_command_failed",
  });
});

test("a stream cut inside a frame header", () => {
  for (let cut = 1; cut < 8; cut++) {
    const bytes = concat([frame(1, "ok"), frame(2, "more").subarray(0, cut)]);
    const result = native.demuxFrames([bytes]);
    assert.equal(text(result, 1), "ok");
    assert.deepEqual(result.finishError, {
      message: `Docker engine ended the exec stream inside a frame header (${cut} of 8 bytes).`,
      code: "docker_command_failed",
    });
  }
});

test("a stream cut inside a payload", () => {
  const bytes = frame(2, "abcdef").subarray(0, 11);
  const result = native.demuxFrames([bytes]);
  assert.equal(text(result, 2), "abc");
  assert.equal(result.finishError.message, "Docker engine ended the exec stream inside a frame (3 payload bytes missing).");
});

test("an unknown stream type is an error, after the frames before it", () => {
  for (const type of [4, 7, 128, 255]) {
    const bytes = concat([frame(1, "before"), frame(type, "junk"), frame(1, "after")]);
    for (let i = 0; i <= bytes.length; i++) {
      const result = native.demuxFrames(splitAt(bytes, [i]));
      assert.equal(text(result, 1), "before");
      assert.deepEqual(result.error, {
        message: `Docker engine sent an unknown stream type: ${type}`,
        code: "docker_command_failed",
      });
      assert.equal(result.finishError, undefined);
    }
  }
});

test("the three bytes after the stream byte are ignored", () => {
  const bytes = frame(1, "abc");
  bytes[1] = 0xff;
  bytes[2] = 0x01;
  bytes[3] = 0x7f;
  const result = native.demuxFrames([bytes]);
  assert.equal(text(result, 1), "abc");
  assert.equal(result.error, undefined);
});

test("a system error frame is reported at its end, with its text", () => {
  const bytes = concat([frame(1, "partial output"), frame(3, "exec failed: no such file\n"), frame(1, "never")]);
  for (let i = 0; i <= bytes.length; i++) {
    const result = native.demuxFrames(splitAt(bytes, [i]));
    assert.equal(text(result, 1), "partial output");
    assert.deepEqual(result.error, {
      message: "Docker engine reported an error: exec failed: no such file",
      code: "docker_command_failed",
    });
  }
  const oneByte = native.demuxFrames(Array.from(bytes, (b) => Uint8Array.of(b)));
  assert.equal(oneByte.error.message, "Docker engine reported an error: exec failed: no such file");
});

test("an empty system error frame is still an error", () => {
  const result = native.demuxFrames([frame(3, "")]);
  assert.deepEqual(result.error, { message: "Docker engine reported an error: ", code: "docker_command_failed" });
});

test("the text of a system error frame is bounded", () => {
  const long = "E".repeat(100000);
  const result = native.demuxFrames([frame(3, long)]);
  assert.equal(result.error.code, "docker_command_failed");
  assert.equal(result.error.message, `Docker engine reported an error: ${"E".repeat(1023)}`);
});

test("a system error frame cut short is a finish error", () => {
  const result = native.demuxFrames([frame(3, "boom").subarray(0, 10)]);
  assert.equal(result.error, undefined);
  assert.equal(result.finishError.message, "Docker engine ended the exec stream inside a frame (2 payload bytes missing).");
});

test("the callback's stop request: nothing lost, nothing repeated, at every split", () => {
  for (const every of [1, 2, 3]) {
    for (let i = 0; i <= stream.length; i++) {
      const result = native.demuxFrames(splitAt(stream, [i]), { stopAfter: every });
      assertStream(result);
      assert.equal(result.stops, Math.floor(result.events.length / every));
      assert.ok(result.stops > 0);
    }
  }
});

test("a stop request on the last piece of a frame ends that frame", () => {
  const bytes = concat([frame(1, "a"), frame(2, "b"), frame(1, "c")]);
  const result = native.demuxFrames([bytes], { stopAfter: 1 });
  assert.equal(result.stops, 3);
  assert.deepEqual(
    result.events.map((e) => [e.stream, Buffer.from(e.data).toString()]),
    [
      [1, "a"],
      [2, "b"],
      [1, "c"],
    ],
  );
  assert.equal(result.finishError, undefined);
});
