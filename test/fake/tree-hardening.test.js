// Tree transfers against a hostile sandbox (issue 23), on the fake engine:
//  - maxFiles counts every entry, directories as files: a directory flood stops at the
//    quota on export (host directory or consumer) and on import, with how far it got.
//  - A flood of directory entries with long paths is flow-controlled as file bytes are:
//    the engine is held back while the consumer is slow, so what waits on the host stays
//    bounded however many entries the archive holds.
//  - Modes on the host are the sandbox's permission bits less the umask, never setuid,
//    setgid or sticky; a directory without the owner's rwx still gets its whole subtree.
//  - An export whose archive stops coming fails after its idle deadline (idleTimeoutMs),
//    while a slow consumer (the export paused by the host) never counts as idle.
//  - importTree from a host directory opens each entry beneath its directory and checks it
//    is what lstat saw: a directory swapped for a link, a file replaced by another of the
//    same size, a fifo swapped in (which would hold a thread in open()) are refused.
import test from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { chmodSync, closeSync, constants, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, readlinkSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  HANG_MS,
  GO_MODE_DIR,
  chunked,
  expectCode,
  fakeSandbox,
  head,
  parseTar,
  pathStat,
  sleep,
  until,
  tarEnd,
  tarEntry,
} from "../helpers/fake-engine.js";

const T = { timeout: HANG_MS };
const work = mkdtempSync(path.join(tmpdir(), "anvia-fake-tree-hard-"));
// Some outputs hold directories without the owner's rwx: given it back before removal.
function reopen(dir) {
  chmodSync(dir, 0o700);
  for (const d of readdirSync(dir, { withFileTypes: true })) if (d.isDirectory()) reopen(path.join(dir, d.name));
}
test.after(() => {
  reopen(work);
  rmSync(work, { recursive: true, force: true });
});
let n = 0;
const dest = () => path.join(work, `out-${n++}`);

function nothingLeft(out) {
  assert.ok(!existsSync(out), "the destination was not made");
  const base = path.basename(out);
  assert.deepEqual(readdirSync(path.dirname(out)).filter((f) => f.startsWith(`.${base}.`)), [], "no temporary directory is left");
}

function serveWorkspace(fake, tar) {
  fake.route("GET", "/containers/:name/archive", {
    raw: [
      head(200, { "X-Docker-Container-Path-Stat": pathStat({ name: "workspace", mode: GO_MODE_DIR + 0o755 }), "Content-Type": "application/x-tar", "Transfer-Encoding": "chunked" }),
      chunked(tar, 4096, true),
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
      const rest = Buffer.from(` ${k}=${v}\n`);
      let len = rest.length + 1;
      while (String(len).length + rest.length !== len) len = String(len).length + rest.length;
      return Buffer.concat([Buffer.from(String(len)), rest]);
    }),
  );
  return Buffer.concat([tarEntry({ name: "PaxHeader", type: "x", content: body }), member]);
}

const flood = (count) => Buffer.concat([dir("workspace"), ...Array.from({ length: count }, (_, i) => dir(`workspace/d${i}`)), tarEnd()]);

// ---- maxFiles counts directories ----------------------------------------------------------

test("a directory flood stops at maxFiles on export to a host directory; nothing reaches the host", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  serveWorkspace(fake, flood(3000));
  const out = dest();
  const error = await expectCode(runtime.exportTree({ kind: "workspace" }, out, { quotas: { maxFiles: 100 } }), "quota_exceeded", /Tree transfer exceeds maxFiles \(101 > 100\): d100/);
  assert.equal(error.details.quota, "maxFiles");
  assert.equal(error.details.limit, 100);
  assert.equal(error.details.files, 0);
  assert.equal(error.details.directories, 100);
  nothingLeft(out);
});

test("a directory flood stops at maxFiles on export to a consumer, which sees at most maxFiles entries", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  serveWorkspace(fake, Buffer.concat([dir("workspace"), file("workspace/a"), ...Array.from({ length: 3000 }, (_, i) => dir(`workspace/d${i}`)), tarEnd()]));
  let seen = 0;
  const error = await expectCode(runtime.exportTree({ kind: "workspace" }, () => void seen++, { quotas: { maxFiles: 50 } }), "quota_exceeded", /maxFiles \(51 > 50\)/);
  assert.deepEqual([error.details.files, error.details.directories], [1, 49]);
  assert.ok(seen <= 50, `the consumer saw ${seen} entries`);
});

test("files and directories together: maxFiles is the number of entries", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  const tar = Buffer.concat([dir("workspace"), dir("workspace/a"), file("workspace/a/f"), dir("workspace/b"), file("workspace/b/g"), tarEnd()]);
  serveWorkspace(fake, tar);
  const summary = await runtime.exportTree({ kind: "workspace" }, dest(), { quotas: { maxFiles: 4 } });
  assert.deepEqual([summary.files, summary.directories], [2, 2]);
  serveWorkspace(fake, tar);
  const out = dest();
  await expectCode(runtime.exportTree({ kind: "workspace" }, out, { quotas: { maxFiles: 3 } }), "quota_exceeded", /maxFiles \(4 > 3\): b\/g/);
  nothingLeft(out);
});

test("import: directories, given or made as parents, count against maxFiles; a directory given again does not", T, async (t) => {
  const { runtime } = await fakeSandbox(t);
  const dirs = Array.from({ length: 200 }, (_, i) => ({ kind: "directory", path: `d${i}` }));
  const error = await expectCode(runtime.importTree(dirs, { quotas: { maxFiles: 100 } }), "quota_exceeded", /maxFiles \(101 > 100\): d100/);
  assert.deepEqual([error.details.files, error.details.directories], [0, 100]);
  // a/b/c/f: three parents and the file are four entries.
  const deep = [{ kind: "file", path: "a/b/c/f", bytes: new Uint8Array(1) }];
  const e2 = await expectCode(runtime.importTree(deep, { quotas: { maxFiles: 3 } }), "quota_exceeded", /maxFiles \(4 > 3\): a\/b\/c\/f/);
  assert.deepEqual([e2.details.files, e2.details.directories], [0, 3]);
  // "a" made as a parent, then given: one entry, so two entries fit in 2.
  const again = [{ kind: "file", path: "a/f", bytes: new Uint8Array(1) }, { kind: "directory", path: "a", mode: 0o700 }, { kind: "file", path: "x", bytes: new Uint8Array(1) }];
  const e3 = await expectCode(runtime.importTree(again, { quotas: { maxFiles: 2 } }), "quota_exceeded", /maxFiles \(3 > 2\): x/);
  assert.deepEqual([e3.details.files, e3.details.directories], [1, 1]);
});

// ---- what waits on the host stays bounded ------------------------------------------------

test("a flood of long-named directories is flow-controlled: the engine is held back by a slow consumer", { timeout: HANG_MS }, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  const COUNT = 12000;
  const name = (i) => `workspace/${String(i).padStart(6, "0")}-${"x".repeat(3000)}`;
  let sent = 0;
  let sentEntries = 0;
  fake.route("GET", "/containers/:name/archive", async (req, res) => {
    await res.write(head(200, { "X-Docker-Container-Path-Stat": pathStat({ name: "workspace", mode: GO_MODE_DIR + 0o755 }), "Transfer-Encoding": "chunked" }));
    await res.write(chunked(dir("workspace"), Infinity, false));
    for (let i = 0; i < COUNT; i++) {
      const entry = paxEntry({ path: name(i) }, dir(`workspace/stand-in${i}`));
      if (!(await res.write(chunked(entry, Infinity, false)))) return;
      sent += entry.length;
      sentEntries++;
    }
    await res.write(chunked(tarEnd()));
    res.done();
  });
  let consumed = 0;
  let ahead = 0;
  const summary = await runtime.exportTree({ kind: "workspace" }, async () => {
    consumed++;
    ahead = Math.max(ahead, (sentEntries - consumed) * 3010);
    if (consumed < 3000) await sleep(1); // slow for the first quarter
  }, { quotas: { maxFiles: COUNT, maxPathBytes: 4096 } });
  assert.equal(summary.directories, COUNT);
  t.diagnostic(`the engine was at most ${(ahead / 1048576).toFixed(1)} MiB of paths ahead of the consumer (${(sent / 1048576).toFixed(0)} MiB in all)`);
  assert.ok(ahead < 24 * 1024 * 1024, `the engine got ${(ahead / 1048576).toFixed(1)} MiB of paths ahead of a slow consumer`);
});

// ---- modes on the host ---------------------------------------------------------------------

const modeOf = (p) => statSync(p).mode & 0o7777;

test("host modes are the sandbox's bits less the umask, never setuid, setgid or sticky", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  const old = process.umask(0o022);
  t.after(() => process.umask(old));
  serveWorkspace(fake, Buffer.concat([
    dir("workspace"),
    dir("workspace/open", 0o777),
    file("workspace/open/w.txt", "world-writable", { mode: 0o666 }),
    file("workspace/open/big.bin", Buffer.alloc(300 * 1024, 1), { mode: 0o777 }),
    file("workspace/suid", "#!/bin/sh\n", { mode: 0o4777 }),
    dir("workspace/sticky", 0o1777),
    dir("workspace/sgid", 0o2775),
    file("workspace/private", "p", { mode: 0o600 }),
    tarEnd(),
  ]));
  const out = dest();
  await runtime.exportTree({ kind: "workspace" }, out);
  assert.equal(modeOf(path.join(out, "open")), 0o755);
  assert.equal(modeOf(path.join(out, "open/w.txt")), 0o644);
  assert.equal(modeOf(path.join(out, "open/big.bin")), 0o755);
  assert.equal(modeOf(path.join(out, "suid")), 0o755);
  assert.equal(modeOf(path.join(out, "sticky")), 0o755);
  assert.equal(modeOf(path.join(out, "sgid")), 0o755);
  assert.equal(modeOf(path.join(out, "private")), 0o600);
  process.umask(0o077);
  serveWorkspace(fake, Buffer.concat([dir("workspace"), dir("workspace/d", 0o777), file("workspace/d/f", "x", { mode: 0o666 }), tarEnd()]));
  const out2 = dest();
  await runtime.exportTree({ kind: "workspace" }, out2);
  assert.equal(modeOf(path.join(out2, "d")), 0o700);
  assert.equal(modeOf(path.join(out2, "d/f")), 0o600);
});

// Run by root, this shows the modes only (root writes through any mode); run as any other
// user it shows the subtree of a 0o555, 0o500 or 0o000 directory is written in full.
test("a directory without the owner's rwx still gets its subtree, also when the archive comes back into it", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  const old = process.umask(0o022);
  t.after(() => process.umask(old));
  serveWorkspace(fake, Buffer.concat([
    dir("workspace"),
    dir("workspace/ro", 0o555),
    dir("workspace/ro/inner", 0o500),
    file("workspace/ro/inner/a", "a"),
    file("workspace/top", "t"), // leaves both at the root
    file("workspace/ro/inner/a2", "a2"), // and comes straight back into them
    dir("workspace/other"),
    file("workspace/other/b", "b"),
    file("workspace/ro/inner/c", "c"), // back into both, after they were closed
    dir("workspace/none", 0o000),
    file("workspace/none/d", "d"),
    tarEnd(),
  ]));
  const out = dest();
  const summary = await runtime.exportTree({ kind: "workspace" }, out);
  assert.deepEqual([summary.files, summary.directories], [6, 4]);
  assert.equal(modeOf(path.join(out, "ro")), 0o555);
  assert.equal(modeOf(path.join(out, "ro/inner")), 0o500);
  assert.equal(modeOf(path.join(out, "none")), 0o000);
  chmodSync(path.join(out, "none"), 0o700);
  assert.equal(readFileSync(path.join(out, "none/d"), "utf8"), "d");
  assert.equal(readFileSync(path.join(out, "ro/inner/c"), "utf8"), "c");
  assert.equal(readFileSync(path.join(out, "ro/inner/a2"), "utf8"), "a2");
  assert.equal(readFileSync(path.join(out, "other/b"), "utf8"), "b");
  // A failure after a restrictive directory was closed leaves nothing behind.
  serveWorkspace(fake, Buffer.concat([dir("workspace"), dir("workspace/ro", 0o500), file("workspace/ro/a"), dir("workspace/z"), file("workspace/z/../../evil"), tarEnd()]));
  const out2 = dest();
  await expectCode(runtime.exportTree({ kind: "workspace" }, out2), "invalid_path", /leaves the selection/);
  nothingLeft(out2);
});

// Root writes through any mode: run by root, the test above is run again as nobody, where a
// directory without the owner's rwx does stop writes (when setpriv is there to switch).
const asNobody = process.getuid?.() === 0 && !process.env.ANVIA_TREE_TEST_AS_NOBODY && existsSync("/usr/bin/setpriv");
test("the same as a user who is not root", { ...T, skip: asNobody ? false : "not run by root, or no setpriv" }, () => {
  const me = new URL(import.meta.url).pathname;
  const { NODE_TEST_CONTEXT, ...env } = process.env; // the child reports in plain text, not to this runner
  void NODE_TEST_CONTEXT;
  const out = execFileSync(
    "/usr/bin/setpriv",
    ["--reuid=65534", "--regid=65534", "--clear-groups", process.execPath, "--test", "--test-name-pattern=without the owner's rwx", me],
    { env: { ...env, ANVIA_TREE_TEST_AS_NOBODY: "1", TMPDIR: "/tmp" }, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] },
  );
  assert.match(out, /^# pass 1$/m, out);
  assert.match(out, /^# fail 0$/m, out);
});

// ---- the idle deadline ---------------------------------------------------------------------

const wsHead = () => head(200, { "X-Docker-Container-Path-Stat": pathStat({ name: "workspace", mode: GO_MODE_DIR + 0o755 }), "Transfer-Encoding": "chunked" });

/** Rejects if `promise` has not settled within ms (a hang fails the test, not the run). */
function within(promise, ms, what) {
  let timer;
  const late = new Promise((_, reject) => (timer = setTimeout(() => reject(new assert.AssertionError({ message: `${what}: still pending after ${ms} ms` })), ms)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

test("an archive that stops coming fails the export after idleTimeoutMs, and the request is ended", { timeout: 60_000 }, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  let reply;
  fake.route("GET", "/containers/:name/archive", async (req, res) => {
    reply = res;
    await res.write(wsHead());
    await res.write(chunked(Buffer.concat([dir("workspace"), dir("workspace/a"), file("workspace/a/f", "some")]), Infinity, false));
    // ... and nothing more, never.
  });
  for (const destination of [dest(), async (e) => { if (e.bytes) for await (const c of e.bytes) void c; }]) {
    const started = Date.now();
    const error = await within(
      expectCode(runtime.exportTree({ kind: "workspace" }, destination, { idleTimeoutMs: 300 }), "timeout", /nothing came from the sandbox for 300 ms \(idleTimeoutMs/),
      30_000,
      "the stalled export",
    );
    assert.ok(Date.now() - started >= 290, `failed after ${Date.now() - started} ms`);
    assert.deepEqual([error.details.files, error.details.directories], [1, 1]);
    if (typeof destination === "string") nothingLeft(destination);
    // The engine's connection is closed (what releases its container lock).
    await within(until(() => reply.destroyed || reply.socket.readableEnded), 10_000, "the connection's end");
  }
});

test("an export held back by a slow consumer is not idle: a pause longer than idleTimeoutMs is fine", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  const SIZE = 24 * 1024 * 1024;
  fake.route("GET", "/containers/:name/archive", async (req, res) => {
    await res.write(wsHead());
    await res.write(chunked(Buffer.concat([dir("workspace"), file("workspace/big", "", { size: SIZE, pad: false })]), Infinity, false));
    const piece = Buffer.alloc(256 * 1024, 7);
    for (let i = 0; i < SIZE / piece.length; i++) if (!(await res.write(chunked(piece, Infinity, false)))) return;
    await res.write(chunked(tarEnd()));
    res.done();
  });
  // The idle limit is wide enough that a busy machine's pause between two of the fake
  // engine's writes never reaches it; the consumer's pauses are longer still.
  const IDLE = 1500;
  let got = 0;
  await runtime.exportTree({ kind: "workspace" }, async (entry) => {
    if (entry.kind !== "file") return;
    await sleep(IDLE * 2); // the export is paused all this time
    for await (const chunk of entry.bytes) {
      got += chunk.byteLength;
      if (got === 8 * 1024 * 1024) await sleep(IDLE * 1.5);
    }
  }, { idleTimeoutMs: IDLE, quotas: { maxFileBytes: SIZE } });
  assert.equal(got, SIZE);
});

test("idleTimeoutMs is a positive safe integer", T, async (t) => {
  const { runtime } = await fakeSandbox(t);
  for (const v of [0, -1, 1.5, "100", Number.MAX_SAFE_INTEGER + 2])
    await assert.rejects(runtime.exportTree({ kind: "workspace" }, () => {}, { idleTimeoutMs: v }), { name: "RangeError", message: "idleTimeoutMs must be a positive safe integer." });
});

// ---- importTree from a host directory: every entry opened beneath its directory ------------

function captureUploads(fake) {
  const bodies = [];
  fake.route("PUT", "/containers/:name/archive", (req, res) => {
    bodies.push(req.body);
    res.empty(200);
  });
  return bodies;
}

const hostTree = () => mkdtempSync(path.join(work, "src-"));

/** The descriptors of this process open on something under dir. */
function openUnder(dir) {
  const out = [];
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target === dir || target.startsWith(`${dir}/`)) out.push(target);
    } catch {}
  }
  return out;
}

test("control: a host directory imports as one archive, with its modes; links refused or skipped", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  const uploads = captureUploads(fake);
  const src = hostTree();
  mkdirSync(path.join(src, "a/b"), { recursive: true });
  writeFileSync(path.join(src, "top.txt"), "top");
  writeFileSync(path.join(src, "a/b/big.bin"), Buffer.alloc(600 * 1024, 3));
  writeFileSync(path.join(src, "a/small.sh"), "#!/bin/sh\n", { mode: 0o755 });
  const summary = await runtime.importTree(src, { path: "proj" });
  assert.deepEqual([summary.files, summary.directories], [3, 2]);
  const entries = parseTar(uploads[0]);
  const stage = entries[0].name;
  const got = Object.fromEntries(entries.slice(1).map((e) => [e.name.slice(stage.length), [e.mode, e.content.length]]));
  assert.deepEqual(got, { "top.txt": [0o644, 3], "a/": [0o755, 0], "a/small.sh": [0o755, 10], "a/b/": [0o755, 0], "a/b/big.bin": [0o644, 600 * 1024] });
  assert.deepEqual(openUnder(src), [], "every directory and file the walk opened is closed");
  symlinkSync("/etc", path.join(src, "a/link"));
  await expectCode(runtime.importTree(src, { path: "proj2" }), "invalid_entry", /Host path is a symbolic link: .*a\/link/);
  await until(() => openUnder(src).length === 0); // a walk that failed closes what it held too (a prefetch may finish first)
  assert.equal((await runtime.importTree(src, { path: "proj3", specialFiles: "skip" })).skipped, 1);
  assert.deepEqual(openUnder(src), []);
});

/** Runs `swap` at the first progress report: entries were looked at (lstat), most not opened yet. */
const onFirstProgress = (swap) => {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    swap();
  };
};

test("a directory swapped for a link after it was looked at is refused, never followed", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  const uploads = captureUploads(fake);
  const src = hostTree();
  const outside = hostTree();
  writeFileSync(path.join(outside, "secret.txt"), "SECRET outside the import");
  // 40 files first in the walk: the root's subdirectory is opened only once they are read ahead.
  for (let i = 0; i < 40; i++) writeFileSync(path.join(src, `f${i}`), "x");
  mkdirSync(path.join(src, "z"));
  writeFileSync(path.join(src, "z/inside.txt"), "inside");
  const swap = onFirstProgress(() => {
    renameSync(path.join(src, "z"), path.join(outside, "z-moved"));
    symlinkSync(outside, path.join(src, "z"));
  });
  await within(expectCode(runtime.importTree(src, { onProgress: swap }), "invalid_entry", /Host directory changed while it was read: .*\/z$/), 30_000, "the import");
  await until(() => openUnder(src).length === 0); // read-ahead entries let their directories go
  for (const body of uploads) assert.ok(!body.includes("SECRET"), "nothing from outside the import was sent");
});

test("small files replaced after they were looked at are refused (the prefetch checks the inode)", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  const uploads = captureUploads(fake);
  const src = hostTree();
  for (let i = 0; i < 100; i++) writeFileSync(path.join(src, `f${String(i).padStart(3, "0")}`), "original!!");
  writeFileSync(path.join(work, "secret"), "SECRET!!!!");
  const swap = onFirstProgress(() => {
    for (let i = 0; i < 100; i++) {
      const tmp = path.join(src, `.new${i}`);
      writeFileSync(tmp, "SECRET!!!!"); // the same size: byteLength cannot tell
      renameSync(tmp, path.join(src, `f${String(i).padStart(3, "0")}`));
    }
  });
  await within(expectCode(runtime.importTree(src, { onProgress: swap }), "invalid_entry", /Host file changed while it was read/), 30_000, "the import");
  for (const body of uploads) assert.ok(!body.includes("SECRET"), "no replaced content was sent");
});

test("a fifo swapped in for a file holds no thread: refused at once", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  captureUploads(fake);
  const src = hostTree();
  const names = Array.from({ length: 100 }, (_, i) => path.join(src, `f${String(i).padStart(3, "0")}`));
  for (const f of names) writeFileSync(f, "0123456789");
  // Whatever happens, a reader blocked in open() on one of them is let go (or the run would hang).
  t.after(() => {
    for (const f of names) {
      try {
        closeSync(openSync(f, constants.O_WRONLY | constants.O_NONBLOCK));
      } catch {}
    }
  });
  const swap = onFirstProgress(() => {
    for (const f of names) {
      rmSync(f);
      execFileSync("mkfifo", [f]);
    }
  });
  await within(expectCode(runtime.importTree(src, { onProgress: swap }), "invalid_entry", /Host file changed while it was read/), 30_000, "the import");
});
