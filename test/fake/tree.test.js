// importTree / exportTree against the fault-injecting fake engine: what a real engine will
// not produce on demand.
//  - Exports whose archive lies or attacks: names with "..", absolute names, names outside
//    the selection, links, devices, a NUL in a pax path, a name that is not UTF-8,
//    duplicates, an entry inside a file, a bad checksum, an archive cut short or without its
//    end, a member larger than its header, a tar bomb over the quotas. Each ends with its
//    error and nothing on the host: the destination is not made, no temporary directory is
//    left. Links and the like are skipped on request.
//  - Flow control: a slow consumer holds the engine's writes back (the fake's socket
//    stays full), so what waits in between stays bounded.
//  - The upload of an import: the archive the engine gets (a staging directory first,
//    entries under it, modes, owners), the publish exec started with it and told
//    "publish" on its stdin, and what a stopped import sends: a block that cannot be a
//    header, then "discard" (the staging directory is removed).
//  - Argument checks, before any request.
import test from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  HANG_MS,
  GO_MODE_DIR,
  GO_MODE_SYMLINK,
  chunked,
  expectCode,
  fakeSandbox,
  head,
  parseTar,
  pathStat,
  sleep,
  tarEnd,
  tarEntry,
} from "../helpers/fake-engine.js";

const T = { timeout: HANG_MS }; // a hang fails after minutes; no test races a timer
const work = mkdtempSync(path.join(tmpdir(), "anvia-fake-tree-"));
test.after(() => rmSync(work, { recursive: true, force: true }));
let n = 0;
const dest = () => path.join(work, `out-${n++}`);

function nothingLeft(out) {
  assert.ok(!existsSync(out), "the destination was not made");
  const base = path.basename(out);
  assert.deepEqual(readdirSync(path.dirname(out)).filter((f) => f.startsWith(`.${base}.`)), [], "no temporary directory is left");
}

/** A GET /archive reply for the workspace: a directory stat, then the tar in chunks. */
function serveWorkspace(fake, tar, { stat = { name: "workspace", mode: GO_MODE_DIR + 0o755 }, last = true } = {}) {
  fake.route("GET", "/containers/:name/archive", {
    raw: [
      head(200, { "X-Docker-Container-Path-Stat": pathStat(stat), "Content-Type": "application/x-tar", "Transfer-Encoding": "chunked" }),
      chunked(tar, 4096, last),
    ],
    then: "end",
  });
}

const dir = (name, mode = 0o755) => tarEntry({ name: `${name}/`, type: "5", mode });
const file = (name, content = "x", extra = {}) => tarEntry({ name, content, ...extra });

/** A pax 'x' header with the given records, then the member. */
function paxEntry(records, member) {
  const body = Buffer.concat(
    Object.entries(records).map(([k, v]) => {
      const value = Buffer.isBuffer(v) ? v : Buffer.from(String(v));
      const rest = Buffer.concat([Buffer.from(` ${k}=`), value, Buffer.from("\n")]);
      let len = rest.length + 1;
      while (String(len).length + rest.length !== len) len = String(len).length + rest.length;
      return Buffer.concat([Buffer.from(String(len)), rest]);
    }),
  );
  return Buffer.concat([tarEntry({ name: "PaxHeader", type: "x", content: body }), member]);
}

/** Both destinations: a host directory and a consume(entry) callback. */
async function bothRejects(runtime, fake, tar, code, message, options) {
  const out = dest();
  serveWorkspace(fake, tar);
  await expectCode(runtime.exportTree({ kind: "workspace" }, out, options), code, message);
  nothingLeft(out);
  serveWorkspace(fake, tar);
  await expectCode(runtime.exportTree({ kind: "workspace" }, async (e) => { if (e.bytes) for await (const c of e.bytes) void c; }, options), code, message);
}

test("control: a well-formed archive exports to a host directory with its modes", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  serveWorkspace(fake, Buffer.concat([dir("workspace"), dir("workspace/a", 0o700), file("workspace/a/f.txt", "hello", { mode: 0o640 }), tarEnd()]));
  const out = dest();
  const summary = await runtime.exportTree({ kind: "workspace" }, out);
  assert.deepEqual({ ...summary, durationMs: 0 }, { files: 1, directories: 1, bytes: 5, skipped: 0, durationMs: 0 });
  assert.deepEqual(readdirSync(out, { recursive: true }).sort(), ["a", "a/f.txt"]);
});

for (const [label, tar, code, message] of [
  ["a name with ..", [dir("workspace"), file("workspace/../evil")], "invalid_path", /leaves the selection: workspace\/\.\.\/evil/],
  ["a name with .. deeper down", [dir("workspace"), file("workspace/a/../../../etc/x")], "invalid_path", /leaves the selection/],
  ["an absolute name", [dir("workspace"), file("/etc/cron.d/evil")], "invalid_path", /is absolute: \/etc\/cron\.d\/evil/],
  ["a name outside the selection", [dir("workspace"), file("elsewhere/x")], "invalid_path", /outside the selection: elsewhere\/x/],
  ["a symbolic link pointing out", [dir("workspace"), tarEntry({ name: "workspace/l", type: "2", linkname: "/etc/passwd" })], "invalid_entry", /a symbolic link: l/],
  ["a hard link", [dir("workspace"), file("workspace/a"), tarEntry({ name: "workspace/h", type: "1", linkname: "workspace/a" })], "invalid_entry", /a hard link: h/],
  ["a character device", [dir("workspace"), tarEntry({ name: "workspace/null", type: "3" })], "invalid_entry", /not a regular file or directory: null/],
  ["a fifo", [dir("workspace"), tarEntry({ name: "workspace/fifo", type: "6" })], "invalid_entry", /not a regular file or directory: fifo/],
  ["the same name twice", [dir("workspace"), file("workspace/a"), file("workspace/a")], "invalid_entry", /twice: a/],
  ["an entry inside a file", [dir("workspace"), file("workspace/f"), file("workspace/f/x")], "invalid_entry", /inside a file: f/],
  ["a NUL in a pax path", [dir("workspace"), paxEntry({ path: Buffer.from("workspace/a\0b") }, file("stand-in"))], "invalid_path", /NUL byte/],
  ["a name that is not UTF-8", [dir("workspace"), paxEntry({ path: Buffer.from([0x77, 0x6f, 0x72, 0x6b, 0x73, 0x70, 0x61, 0x63, 0x65, 0x2f, 0xff, 0xfe]) }, file("stand-in"))], "invalid_entry", /not valid UTF-8/],
]) {
  test(`export refuses ${label}; nothing reaches the host`, T, async (t) => {
    const { fake, runtime } = await fakeSandbox(t);
    await bothRejects(runtime, fake, Buffer.concat([...tar, tarEnd()]), code, message);
  });
}

test("links, devices and names that are not UTF-8 are skipped on request", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  const tar = Buffer.concat([
    dir("workspace"),
    tarEntry({ name: "workspace/l", type: "2", linkname: "/etc/passwd" }),
    file("workspace/a", "kept"),
    tarEntry({ name: "workspace/h", type: "1", linkname: "workspace/a" }),
    tarEntry({ name: "workspace/null", type: "3" }),
    paxEntry({ path: Buffer.from([0x77, 0x6f, 0x72, 0x6b, 0x73, 0x70, 0x61, 0x63, 0x65, 0x2f, 0xff]) }, file("stand-in", "dropped")),
    file("workspace/b", "kept too"),
    tarEnd(),
  ]);
  serveWorkspace(fake, tar);
  const out = dest();
  const summary = await runtime.exportTree({ kind: "workspace" }, out, { specialFiles: "skip" });
  assert.equal(summary.skipped, 4);
  assert.deepEqual(readdirSync(out).sort(), ["a", "b"]);
});

for (const [label, bytes, message, opts] of [
  ["a bad header checksum", () => { const e = file("workspace/a"); e[148] ^= 1; return Buffer.concat([dir("workspace"), e, tarEnd()]); }, /checksum does not match/],
  ["an archive without its end", () => Buffer.concat([dir("workspace"), file("workspace/a")]), /ended early/],
  ["a member cut short", () => Buffer.concat([dir("workspace"), file("workspace/a", "x".repeat(100), { size: 5000, pad: false })]), /ended early/],
  ["a GNU long name over 64 KiB", () => Buffer.concat([dir("workspace"), tarEntry({ name: "././@LongLink", type: "L", content: "a".repeat(70 * 1024) }), file("x"), tarEnd()]), /too large/],
  ["a pax record that is not one", () => Buffer.concat([dir("workspace"), tarEntry({ name: "p", type: "x", content: "garbage without a length\n" }), file("workspace/a"), tarEnd()]), /pax record/],
  ["a size that is not a number", () => { const e = file("workspace/a"); e.write("9z9", 124, "latin1"); let s = 0; e.write("        ", 148, "latin1"); for (const b of e.subarray(0, 512)) s += b; e.write(s.toString(8).padStart(6, "0") + "\0 ", 148, "latin1"); return Buffer.concat([dir("workspace"), e, tarEnd()]); }, /size is not a number/],
]) {
  test(`export of ${label} fails as malformed; nothing reaches the host`, T, async (t) => {
    const { fake, runtime } = await fakeSandbox(t);
    await bothRejects(runtime, fake, bytes(), "docker_command_failed", message, opts);
  });
}

test("a tar bomb: a member announcing 1 TiB stops at its header (quota), long before its bytes", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  let sent = 0;
  fake.route("GET", "/containers/:name/archive", async (req, res) => {
    await res.write(head(200, { "X-Docker-Container-Path-Stat": pathStat({ name: "workspace", mode: GO_MODE_DIR + 0o755 }), "Transfer-Encoding": "chunked" }));
    const h = paxEntry({ size: 2 ** 40 }, file("workspace/bomb", "", { size: 0, pad: false })).subarray(0, 512 * 3);
    await res.write(chunked(Buffer.concat([dir("workspace"), h]), Infinity, false));
    const zeros = Buffer.alloc(1024 * 1024);
    for (let i = 0; i < 4096 && !res.destroyed; i++) {
      if (!(await res.write(chunked(zeros, Infinity, false)))) break;
      sent += zeros.length;
    }
    res.destroy();
  });
  const out = dest();
  const error = await expectCode(runtime.exportTree({ kind: "workspace" }, out, { quotas: { maxFileBytes: 2 ** 41 } }), "quota_exceeded", /maxTotalBytes/);
  assert.equal(error.details.quota, "maxTotalBytes");
  assert.equal(error.details.files, 0);
  assert.ok(sent < 64 * 1024 * 1024, `the engine sent ${sent} bytes before the export stopped`);
  nothingLeft(out);
});

test("a slow consumer holds the engine back: what waits in between stays bounded", { timeout: HANG_MS }, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  const SIZE = 96 * 1024 * 1024;
  let sent = 0;
  fake.route("GET", "/containers/:name/archive", async (req, res) => {
    await res.write(head(200, { "X-Docker-Container-Path-Stat": pathStat({ name: "workspace", mode: GO_MODE_DIR + 0o755 }), "Transfer-Encoding": "chunked" }));
    await res.write(chunked(Buffer.concat([dir("workspace"), file("workspace/big", "", { size: SIZE, pad: false })]), Infinity, false));
    const piece = Buffer.alloc(256 * 1024, 7);
    for (let i = 0; i < SIZE / piece.length; i++) {
      if (!(await res.write(chunked(piece, Infinity, false)))) return;
      sent += piece.length;
    }
    await res.write(chunked(tarEnd()));
    res.done();
  });
  let consumed = 0;
  let ahead = 0;
  await runtime.exportTree({ kind: "workspace" }, async (entry) => {
    for await (const chunk of entry.bytes) {
      consumed += chunk.byteLength;
      ahead = Math.max(ahead, sent - consumed);
      if (consumed < 32 * 1024 * 1024) await sleep(2); // slow for the first third
    }
  }, { quotas: { maxFileBytes: SIZE, maxTotalBytes: SIZE } });
  assert.equal(consumed, SIZE);
  t.diagnostic(`the engine was at most ${(ahead / 1048576).toFixed(1)} MiB ahead of the consumer`);
  assert.ok(ahead < 24 * 1024 * 1024, `the engine got ${(ahead / 1048576).toFixed(1)} MiB ahead of a slow consumer`);
});

test("a consumer that throws stops the export with its error", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  serveWorkspace(fake, Buffer.concat([dir("workspace"), file("workspace/a"), file("workspace/b"), tarEnd()]));
  const mine = new Error("consumer failed");
  await assert.rejects(runtime.exportTree({ kind: "workspace" }, async (e) => { if (e.path === "a") throw mine; }), (e) => e === mine);
});

test("a subtree whose stat says symbolic link is refused before its archive is read", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("GET", "/containers/:name/archive", {
    raw: [head(200, { "X-Docker-Container-Path-Stat": pathStat({ name: "sel", mode: GO_MODE_SYMLINK + 0o777, linkTarget: "/etc" }), "Transfer-Encoding": "chunked" }), chunked(Buffer.concat([tarEntry({ name: "sel", type: "2", linkname: "/etc" }), tarEnd()]))],
    then: "end",
  });
  const out = dest();
  await expectCode(runtime.exportTree({ kind: "subtree", path: "sel" }, out), "invalid_path", /symbolic link: sel/);
  nothingLeft(out);
});

// ---- import uploads -------------------------------------------------------------------------

function captureUploads(fake) {
  const bodies = [];
  fake.route("PUT", "/containers/:name/archive", (req, res) => {
    bodies.push({ path: req.query.path, body: req.body, query: req.query });
    res.empty(200);
  });
  return bodies;
}

const imports = (fake) => [...fake.state.execs.values()].filter((e) => e.body.Cmd?.[3] === "anvia-import");

test("an import is one streamed upload of a staging directory, then one publish exec", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  const uploads = captureUploads(fake);
  const summary = await runtime.importTree([
    { kind: "directory", path: "d", mode: 0o700 },
    { kind: "file", path: "d/a.txt", bytes: new TextEncoder().encode("hello"), mode: 0o600 },
    { kind: "file", path: "e/f/g.bin", bytes: new Uint8Array(1000) },
  ], { path: "proj" });
  assert.equal(summary.files, 2);
  assert.equal(summary.directories, 3); // d, e, e/f
  assert.equal(uploads.length, 1);
  assert.equal(uploads[0].path, "/workspace");
  assert.equal(uploads[0].query.noOverwriteDirNonDir, "true");
  const entries = parseTar(uploads[0].body);
  const stage = entries[0].name.replace(/\/$/, "");
  assert.match(stage, /^\.anvia-import\.[0-9a-f]{32}$/);
  assert.deepEqual(
    entries.map((e) => [e.name, e.type, e.mode, e.uid, e.gid, e.content.toString()]),
    [
      [`${stage}/`, "5", 0o700, 0, 0, ""],
      [`${stage}/d/`, "5", 0o700, 0, 0, ""],
      [`${stage}/d/a.txt`, "0", 0o600, 0, 0, "hello"],
      [`${stage}/e/`, "5", 0o755, 0, 0, ""],
      [`${stage}/e/f/`, "5", 0o755, 0, 0, ""],
      [`${stage}/e/f/g.bin`, "0", 0o644, 0, 0, "\0".repeat(1000)],
    ],
  );
  // Started with the upload, it waits on its stdin for the verdict.
  const [exec] = imports(fake);
  assert.deepEqual(exec.body.Cmd.slice(3, 8), ["anvia-import", "/workspace", "proj", stage, "await"]);
  assert.equal(exec.body.AttachStdin, true);
  assert.equal(String(exec.stdin), "publish\n");
});

test("a lying byteLength: the upload gets a block that cannot be a header, then the staging directory is removed", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  const uploads = captureUploads(fake);
  async function* short() {
    yield new Uint8Array(3000);
  }
  await expectCode(
    runtime.importTree([{ kind: "file", path: "ok", bytes: new Uint8Array(10) }, { kind: "file", path: "lie", byteLength: 5000, open: short }], { path: "p" }),
    "invalid_entry",
    /yielded 3000 bytes, not its byteLength 5000: lie/,
  );
  assert.equal(uploads.length, 1);
  const body = uploads[0].body;
  assert.ok(body.subarray(body.length - 512).every((b) => b === 0xff), "the upload ends with a block of 0xff");
  const execs = imports(fake);
  assert.equal(execs.length, 1);
  assert.equal(String(execs[0].stdin), "discard\n");
});

test("an engine failure during the upload rejects with the engine's message and removes the staging directory", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  fake.route("PUT", "/containers/:name/archive", { status: 500, json: { message: "write /var/lib/docker/x: no space left on device" } });
  await expectCode(runtime.importTree([{ kind: "file", path: "a", bytes: new Uint8Array(10) }]), "docker_command_failed", /no space left on device/);
  assert.equal(String(imports(fake).at(-1).stdin), "discard\n");
});

test("a publish that fails (a link planted on the way) is invalid_path naming it", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  captureUploads(fake);
  fake.execProgram = (exec, stdin) => (String(stdin) === "publish\n" ? { stderr: "proj/sub", exitCode: 91 } : { exitCode: 0 });
  await expectCode(runtime.importTree([{ kind: "file", path: "sub/a", bytes: new Uint8Array(1) }], { path: "proj" }), "invalid_path", /symbolic link: proj\/sub/);
});

test("argument checks come before any request", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  const before = fake.requests?.length;
  await assert.rejects(runtime.importTree(42), { name: "TypeError", message: "source must be a host directory path or an iterable of entries." });
  await assert.rejects(runtime.importTree([], null), { name: "TypeError", message: "options must be an object." });
  await assert.rejects(runtime.importTree([], { onProgress: 1 }), { name: "TypeError", message: "onProgress must be a function." });
  await assert.rejects(runtime.importTree([], { specialFiles: "follow" }), { name: "TypeError", message: 'specialFiles must be "refuse" or "skip".' });
  await assert.rejects(runtime.importTree([], { quotas: 5 }), { name: "TypeError", message: "quotas must be an object." });
  await assert.rejects(runtime.importTree([], { quotas: { maxFiles: -1 } }), { name: "RangeError", message: "quotas.maxFiles must be a non-negative safe integer." });
  await expectCode(runtime.importTree([], { path: "../up" }), "invalid_path", /cannot leave the workspace/);
  await expectCode(runtime.importTree([], { path: "/abs" }), "invalid_path", /must be relative/);
  await assert.rejects(runtime.exportTree({ kind: "all" }, async () => {}), { name: "TypeError", message: 'selection.kind must be "workspace", "subtree" or "files".' });
  await assert.rejects(runtime.exportTree(null, async () => {}), { name: "TypeError", message: "selection must be an object." });
  await assert.rejects(runtime.exportTree({ kind: "files", paths: [] }, async () => {}), { name: "TypeError", message: "selection.paths must be a non-empty array of strings." });
  await expectCode(runtime.exportTree({ kind: "files", paths: ["a", "a"] }, async () => {}), "invalid_path", /twice: a/);
  await expectCode(runtime.exportTree({ kind: "files", paths: ["../x"] }, async () => {}), "invalid_path", /cannot leave the workspace/);
  await assert.rejects(runtime.exportTree({ kind: "workspace" }, 42), { name: "TypeError", message: "destination must be a host directory path or a consume(entry) function." });
  await assert.rejects(runtime.exportTree({ kind: "workspace" }, async () => {}, { specialFiles: true }), { name: "TypeError", message: 'specialFiles must be "refuse" or "skip".' });
  if (before !== undefined) assert.equal(fake.requests.length, before);
  // Entries are checked as they come: the import then rejects with what is wrong.
  captureUploads(fake);
  await assert.rejects(runtime.importTree([{ kind: "link", path: "x" }]), { name: "TypeError", message: 'An import entry\'s kind must be "file" or "directory".' });
  await expectCode(runtime.importTree([{ kind: "file", path: "../x", bytes: new Uint8Array(1) }]), "invalid_path", /cannot leave the workspace/);
  await assert.rejects(runtime.importTree([{ kind: "file", path: "x", byteLength: -1, open: () => [] }]), { name: "RangeError", message: "byteLength must be a non-negative safe integer: x" });
  await assert.rejects(runtime.importTree([{ kind: "directory", path: "x", mode: 0o10000 }]), { name: "RangeError", message: "mode must be an integer from 0 to 0o7777: x" });
  await expectCode(runtime.importTree([{ kind: "file", path: "x", bytes: new Uint8Array(1) }, { kind: "file", path: "x", bytes: new Uint8Array(1) }]), "invalid_entry", /twice: x/);
  await expectCode(runtime.importTree([{ kind: "file", path: "x", bytes: new Uint8Array(1) }, { kind: "file", path: "x/y", bytes: new Uint8Array(1) }]), "invalid_path", /inside a file of the import: x/);
});
