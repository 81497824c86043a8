// readFile's archive download gone wrong: cut mid-transfer, unsafe entry names, entries
// larger than announced, stat headers that lie or are missing, and tar bombs far over
// maxFileBytes (the read must stop at its bound without buffering the rest).
import test from "node:test";
import assert from "node:assert/strict";
import {
  HANG_MS,
  GO_MODE_DIR,
  GO_MODE_SYMLINK,
  chunked,
  expectCode,
  fakeSandbox,
  head,
  mib,
  pathStat,
  reply,
  tarEnd,
  tarEntry,
  tarOf,
} from "../helpers/fake-engine.js";

const T = { timeout: HANG_MS }; // a hang fails after minutes; no test races a timer
const MAX_FILE = 1024 * 1024; // the sandboxes below are resumed with maxFileBytes = 1 MiB
const LIMITS = { "anvia.sandbox.runtime.max-file-bytes": String(MAX_FILE) };

function statHeader(stat) {
  return { "X-Docker-Container-Path-Stat": pathStat(stat) };
}

/** An archive reply: the stat header, then the tar in chunks. */
function archiveReply(stat, tar, { last = true } = {}) {
  return [
    head(200, { ...statHeader(stat), "Content-Type": "application/x-tar", "Transfer-Encoding": "chunked" }),
    chunked(tar, 4096, last),
  ];
}

async function sandbox(t) {
  return fakeSandbox(t, { labels: LIMITS });
}

test("control: a well-formed archive reads back", T, async (t) => {
  const { fake, runtime } = await sandbox(t);
  fake.route("GET", "/containers/:name/archive", { raw: archiveReply({ name: "a.txt", size: 5 }, tarOf([{ name: "a.txt", content: "hello" }])) });
  assert.equal(Buffer.from(await runtime.readFile({ path: "a.txt" })).toString(), "hello");
});

// ---- cuts ------------------------------------------------------------------------------------------

test("archive download cut mid-chunk", T, async (t) => {
  const { fake, runtime } = await sandbox(t);
  const tar = tarOf([{ name: "a.txt", content: "x".repeat(20000) }]);
  fake.route("GET", "/containers/:name/archive", {
    raw: [head(200, { ...statHeader({ name: "a.txt", size: 20000 }), "Transfer-Encoding": "chunked" }), `${(8000).toString(16)}\r\n`, tar.subarray(0, 3000)],
    then: "destroy",
  });
  await expectCode(runtime.readFile({ path: "a.txt" }), "docker_command_failed", /connection failed/);
});

test("archive download cut between chunks (FIN, no last chunk)", T, async (t) => {
  const { fake, runtime } = await sandbox(t);
  const tar = tarOf([{ name: "a.txt", content: "x".repeat(20000) }]);
  fake.route("GET", "/containers/:name/archive", {
    raw: [head(200, { ...statHeader({ name: "a.txt", size: 20000 }), "Transfer-Encoding": "chunked" }), chunked(tar.subarray(0, 8192), 4096, false)],
    then: "end",
  });
  await expectCode(runtime.readFile({ path: "a.txt" }), "docker_command_failed", /connection failed/);
});

test("archive download with Content-Length cut short", T, async (t) => {
  const { fake, runtime } = await sandbox(t);
  const tar = tarOf([{ name: "a.txt", content: "x".repeat(20000) }]);
  fake.route("GET", "/containers/:name/archive", {
    raw: [head(200, { ...statHeader({ name: "a.txt", size: 20000 }), "Content-Length": tar.length }), tar.subarray(0, 9000)],
    then: "end",
  });
  await expectCode(runtime.readFile({ path: "a.txt" }), "docker_command_failed", /connection failed/);
});

test("archive download whose tar stops at a block boundary (the end marker missing) but the HTTP body is complete", T, async (t) => {
  const { fake, runtime } = await sandbox(t);
  const tar = tarEntry({ name: "a.txt", content: "x".repeat(1000) }); // no end-of-archive blocks
  fake.route("GET", "/containers/:name/archive", { raw: archiveReply({ name: "a.txt", size: 1000 }, tar) });
  // As GNU tar and bsdtar do, the entry is complete: it is read (the HTTP framing said the body is whole).
  const data = await runtime.readFile({ path: "a.txt" });
  assert.equal(Buffer.from(data).toString(), "x".repeat(1000));
});

// ---- unsafe and malformed archives -----------------------------------------------------------------

test("an entry named ../x", T, async (t) => {
  const { fake, runtime } = await sandbox(t);
  fake.route("GET", "/containers/:name/archive", { raw: archiveReply({ name: "x", size: 4 }, tarOf([{ name: "../x", content: "evil" }])) });
  await expectCode(runtime.readFile({ path: "x" }), "docker_command_failed", /unsafe entry name "\.\.\/x"/);
});

test("an entry named /abs", T, async (t) => {
  const { fake, runtime } = await sandbox(t);
  fake.route("GET", "/containers/:name/archive", { raw: archiveReply({ name: "abs", size: 4 }, tarOf([{ name: "/abs", content: "evil" }])) });
  await expectCode(runtime.readFile({ path: "abs" }), "docker_command_failed", /unsafe entry name "\/abs"/);
});

test("an entry named a/../../x (dot-dot in the middle)", T, async (t) => {
  const { fake, runtime } = await sandbox(t);
  fake.route("GET", "/containers/:name/archive", { raw: archiveReply({ name: "x", size: 4 }, tarOf([{ name: "a/../../x", content: "evil" }])) });
  await expectCode(runtime.readFile({ path: "x" }), "docker_command_failed", /unsafe entry name/);
});

test("an entry whose data is larger than its header announces", T, async (t) => {
  const { fake, runtime } = await sandbox(t);
  // The header says 5 bytes; 3000 follow: after the first block, the rest reads as garbage headers.
  const tar = Buffer.concat([tarEntry({ name: "a.txt", content: "y".repeat(3000), size: 5 }), tarEnd()]);
  fake.route("GET", "/containers/:name/archive", { raw: archiveReply({ name: "a.txt", size: 5 }, tar) });
  await expectCode(runtime.readFile({ path: "a.txt" }), "docker_command_failed", /malformed archive/);
});

test("an entry whose data is shorter than its header announces", T, async (t) => {
  const { fake, runtime } = await sandbox(t);
  const tar = Buffer.concat([tarEntry({ name: "a.txt", content: "z".repeat(100), size: 5000, pad: true })]);
  fake.route("GET", "/containers/:name/archive", { raw: archiveReply({ name: "a.txt", size: 5000 }, tar) });
  await expectCode(runtime.readFile({ path: "a.txt" }), "docker_command_failed", /malformed archive/);
});

test("an entry larger than the stat header announced, within maxFileBytes: the tar's bytes (the file grew)", T, async (t) => {
  const { fake, runtime } = await sandbox(t);
  const content = "g".repeat(5000);
  fake.route("GET", "/containers/:name/archive", { raw: archiveReply({ name: "a.txt", size: 10 }, tarOf([{ name: "a.txt", content }])) });
  const data = await runtime.readFile({ path: "a.txt" });
  assert.equal(Buffer.from(data).toString(), content);
});

test("an entry larger than the stat header announced and over maxFileBytes", T, async (t) => {
  const { fake, runtime } = await sandbox(t);
  const content = Buffer.alloc(MAX_FILE + 1, 0x67);
  fake.route("GET", "/containers/:name/archive", { raw: archiveReply({ name: "a.txt", size: 10 }, tarOf([{ name: "a.txt", content }])) });
  await expectCode(runtime.readFile({ path: "a.txt" }), "file_too_large");
});

test("a tar header announcing more than maxFileBytes with a short body", T, async (t) => {
  const { fake, runtime } = await sandbox(t);
  const tar = Buffer.concat([tarEntry({ name: "a.txt", content: "s", size: 8 * 1024 * 1024 * 1024 - 1 }), tarEnd()]);
  fake.route("GET", "/containers/:name/archive", { raw: archiveReply({ name: "a.txt", size: 1 }, tar) });
  await expectCode(runtime.readFile({ path: "a.txt" }), "file_too_large", /8589934591 > 1048576/);
});

test("two entries", T, async (t) => {
  const { fake, runtime } = await sandbox(t);
  fake.route("GET", "/containers/:name/archive", {
    raw: archiveReply({ name: "a.txt", size: 1 }, tarOf([{ name: "a.txt", content: "1" }, { name: "b.txt", content: "2" }])),
  });
  await expectCode(runtime.readFile({ path: "a.txt" }), "docker_command_failed", /more than one entry/);
});

test("an entry of another name", T, async (t) => {
  const { fake, runtime } = await sandbox(t);
  fake.route("GET", "/containers/:name/archive", { raw: archiveReply({ name: "a.txt", size: 1 }, tarOf([{ name: "other.txt", content: "1" }])) });
  await expectCode(runtime.readFile({ path: "a.txt" }), "docker_command_failed", /unexpected entry "other.txt"/);
});

test("a body that is not a tar", T, async (t) => {
  const { fake, runtime } = await sandbox(t);
  fake.route("GET", "/containers/:name/archive", { raw: archiveReply({ name: "a.txt", size: 5 }, Buffer.alloc(2048, "not a tar ")) });
  await expectCode(runtime.readFile({ path: "a.txt" }), "docker_command_failed", /malformed archive/);
});

test("an empty body", T, async (t) => {
  const { fake, runtime } = await sandbox(t);
  fake.route("GET", "/containers/:name/archive", { raw: reply(200, "", statHeader({ name: "a.txt", size: 5 })) });
  await expectCode(runtime.readFile({ path: "a.txt" }), "docker_command_failed", /malformed archive/);
});

test("a symlink entry where the stat header said file", T, async (t) => {
  const { fake, runtime } = await sandbox(t);
  fake.route("GET", "/containers/:name/archive", { raw: archiveReply({ name: "a.txt", size: 5 }, tarOf([{ name: "a.txt", type: "2", linkname: "/etc/passwd" }])) });
  await expectCode(runtime.readFile({ path: "a.txt" }), "invalid_path", /not a regular file/);
});

// ---- the stat header -----------------------------------------------------------------------------------

test("no stat header", T, async (t) => {
  const { fake, runtime } = await sandbox(t);
  fake.route("GET", "/containers/:name/archive", {
    raw: [head(200, { "Transfer-Encoding": "chunked" }), chunked(tarOf([{ name: "a.txt", content: "hello" }]))],
  });
  await expectCode(runtime.readFile({ path: "a.txt" }), "docker_command_failed", /no usable path metadata/);
});

test("a stat header that is not base64 JSON", T, async (t) => {
  const { fake, runtime } = await sandbox(t);
  for (const bad of ["!!!not base64!!!", Buffer.from("{not json").toString("base64"), Buffer.from('{"name":"a","size":-1,"mode":420}').toString("base64")]) {
    const tar = tarOf([{ name: "a.txt", content: "hello" }]);
    fake.route("GET", "/containers/:name/archive", { raw: [head(200, { "X-Docker-Container-Path-Stat": bad, "Transfer-Encoding": "chunked" }), chunked(tar)] }, { times: 1 });
    await expectCode(runtime.readFile({ path: "a.txt" }), "docker_command_failed", /no usable path metadata/);
  }
});

test("a stat header that says directory, or symlink", T, async (t) => {
  const { fake, runtime } = await sandbox(t);
  fake.route("GET", "/containers/:name/archive", { raw: archiveReply({ name: "a.txt", size: 4096, mode: GO_MODE_DIR + 0o755 }, tarOf([{ name: "a.txt/", type: "5" }])) }, { times: 1 });
  await expectCode(runtime.readFile({ path: "a.txt" }), "invalid_path", /not a regular file/);
  fake.route("GET", "/containers/:name/archive", { raw: archiveReply({ name: "a.txt", size: 3, mode: GO_MODE_SYMLINK + 0o777, linkTarget: "/x" }, tarOf([{ name: "a.txt", type: "2", linkname: "/x" }])) }, { times: 1 });
  await expectCode(runtime.readFile({ path: "a.txt" }), "invalid_path", /not a regular file/);
});

test("a stat header far over curl's header bound", T, async (t) => {
  const { fake, runtime } = await sandbox(t);
  fake.route("GET", "/containers/:name/archive", {
    raw: archiveReply({ name: "a.txt", size: 5, linkTarget: "L".repeat(400 * 1024) }, tarOf([{ name: "a.txt", content: "hello" }])),
  });
  await expectCode(runtime.readFile({ path: "a.txt" }), "docker_command_failed");
});

// ---- tar bombs ---------------------------------------------------------------------------------------------

/** Streams `total` bytes after `prefix`, respecting back-pressure; resolves what was written. */
function bomb(prefixFn, total) {
  const stats = { written: 0 };
  const handler = async (req, res) => {
    const chunk = Buffer.alloc(1024 * 1024, 0x42);
    await res.write(prefixFn());
    while (stats.written < total) {
      if (!(await res.write(chunked(chunk, Infinity, false)))) break;
      stats.written += chunk.length;
    }
    res.end();
  };
  return { handler, stats };
}

test("a tar bomb: the stat header lies small, the body streams 100 MiB; the read stops at its bound", T, async (t) => {
  const { fake, runtime } = await sandbox(t);
  await runtime.exec({ command: "echo", args: ["warm"] });
  const total = 100 * 1024 * 1024;
  const { handler, stats } = bomb(
    () =>
      Buffer.concat([
        head(200, { ...statHeader({ name: "a.txt", size: 10 }), "Content-Type": "application/x-tar", "Transfer-Encoding": "chunked" }),
        chunked(tarEntry({ name: "a.txt", content: "", size: total, pad: false }), Infinity, false),
      ]),
    total,
  );
  fake.route("GET", "/containers/:name/archive", handler);
  const before = process.memoryUsage().rss;
  // The read stops at its bound, not at the end of the body: a hang would fail the test
  // on its own (minutes-long) timeout; what it shows whatever the machine's speed is that
  // the engine got to write little of the 100 MiB.
  await expectCode(runtime.readFile({ path: "a.txt" }), "file_too_large");
  const grown = mib(process.memoryUsage().rss - before);
  assert.ok(grown < 50, `rss grew ${grown.toFixed(1)} MiB`);
  assert.ok(stats.written < 16 * 1024 * 1024, `the engine got to write ${mib(stats.written).toFixed(1)} MiB`);
});

test("a tar bomb whose tar header lies small too: the read stops at its bound", T, async (t) => {
  const { fake, runtime } = await sandbox(t);
  await runtime.exec({ command: "echo", args: ["warm"] });
  const total = 100 * 1024 * 1024;
  const { handler, stats } = bomb(
    () =>
      Buffer.concat([
        head(200, { ...statHeader({ name: "a.txt", size: 10 }), "Content-Type": "application/x-tar", "Transfer-Encoding": "chunked" }),
        chunked(tarEntry({ name: "a.txt", content: "0123456789", size: 10 }), Infinity, false),
      ]),
    total,
  );
  fake.route("GET", "/containers/:name/archive", handler);
  const before = process.memoryUsage().rss;
  await expectCode(runtime.readFile({ path: "a.txt" }), "file_too_large", /more than 1048576 bytes/);
  const grown = mib(process.memoryUsage().rss - before);
  assert.ok(grown < 50, `rss grew ${grown.toFixed(1)} MiB`);
  assert.ok(stats.written < 16 * 1024 * 1024, `the engine got to write ${mib(stats.written).toFixed(1)} MiB`);
});

test("an honest stat header over maxFileBytes stops the transfer at the first bytes", T, async (t) => {
  const { fake, runtime } = await sandbox(t);
  const total = 100 * 1024 * 1024;
  const { handler, stats } = bomb(
    () =>
      Buffer.concat([
        head(200, { ...statHeader({ name: "a.txt", size: total }), "Content-Type": "application/x-tar", "Transfer-Encoding": "chunked" }),
        chunked(tarEntry({ name: "a.txt", content: "", size: total, pad: false }), Infinity, false),
      ]),
    total,
  );
  fake.route("GET", "/containers/:name/archive", handler);
  await expectCode(runtime.readFile({ path: "a.txt" }), "file_too_large", /104857600 > 1048576/);
  assert.ok(stats.written < 16 * 1024 * 1024, `the engine got to write ${mib(stats.written).toFixed(1)} MiB`);
});

test("readTextFile of a tar bomb: the same bound", T, async (t) => {
  const { fake, runtime } = await sandbox(t);
  const total = 50 * 1024 * 1024;
  const { handler } = bomb(
    () =>
      Buffer.concat([
        head(200, { ...statHeader({ name: "b.txt", size: 3 }), "Transfer-Encoding": "chunked" }),
        chunked(tarEntry({ name: "b.txt", content: "", size: total, pad: false }), Infinity, false),
      ]),
    total,
  );
  fake.route("GET", "/containers/:name/archive", handler);
  await expectCode(runtime.readTextFile({ path: "b.txt" }), "file_too_large");
});

test("readTextFile and readTextFilePage of bytes that are not UTF-8: TextDecoder's TypeError", T, async (t) => {
  const { fake, runtime } = await sandbox(t);
  const bytes = Buffer.from([0x61, 0xff, 0xfe, 0x62, 0x0a]);
  fake.addFile("/workspace/bin.txt", bytes);
  assert.deepEqual(Buffer.from(await runtime.readFile({ path: "bin.txt" })), bytes);
  await assert.rejects(runtime.readTextFile({ path: "bin.txt" }), (e) => e instanceof TypeError && e.code === "ERR_ENCODING_INVALID_ENCODED_DATA");
  await assert.rejects(runtime.readTextFilePage({ path: "bin.txt" }), (e) => e instanceof TypeError && e.code === "ERR_ENCODING_INVALID_ENCODED_DATA");
});
